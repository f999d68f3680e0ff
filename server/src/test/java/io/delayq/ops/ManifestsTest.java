package io.delayq.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

import io.delayq.core.DelayqConfig;
import io.smallrye.config.WithDefault;
import io.smallrye.config.WithName;
import io.smallrye.config.WithParentName;

/**
 * The manifests in {@code k8s/} agree with the application: the health paths and port it
 * serves, the shutdown timing it has, the properties it reads. A plain JUnit test: it reads files
 * and reflects over {@link DelayqConfig}; nothing needs to start.
 */
class ManifestsTest {
    private static final Path K8S = Path.of("..", "k8s");
    private static final Path APPLICATION_PROPERTIES = Path.of("src/main/resources/application.properties");

    /**
     * The Quarkus properties the manifests are meant to set. Kept short on purpose: anything
     * else a deployment wants belongs here only after someone checked it works as an env var.
     * Each is checked against the config model the Quarkus extensions ship.
     */
    private static final Set<String> QUARKUS_PROPERTIES = Set.of(
            "quarkus.redis.hosts",
            "quarkus.redis.password",
            "quarkus.shutdown.delay",
            "quarkus.http.port",
            "quarkus.log.level");

    /** Documents of every file kustomization.yaml lists, by file name. */
    private static final Map<String, List<Map<String, Object>>> MANIFESTS = new LinkedHashMap<>();
    private static List<String> resources;

    @BeforeAll
    static void loadManifests() throws IOException {
        Map<String, Object> kustomization = load(K8S.resolve("kustomization.yaml")).get(0);
        resources = list(kustomization.get("resources"), "kustomization.yaml resources");
        for (String file : resources) {
            Path path = K8S.resolve(file);
            if (Files.isRegularFile(path)) {
                MANIFESTS.put(file, load(path));
            }
        }
    }

    /**
     * The overlay a service copies (examples/order-service/k8s) builds on this base: it points at
     * it, and the image it replaces is the one the base's Deployment runs.
     */
    @Test
    void serviceOverlayReusesTheBaseAndReplacesItsImage() throws IOException {
        Path overlay = Path.of("..", "examples", "order-service", "k8s");
        Map<String, Object> k = load(overlay.resolve("kustomization.yaml")).get(0);
        List<String> bases = list(k.get("resources"), "overlay resources");
        assertTrue(bases.stream().anyMatch(b -> overlay.resolve(b).normalize().equals(K8S.normalize())),
                "the overlay should list the k8s/ base, lists " + bases);
        List<Object> containers = list(get(find("Deployment", "delayq"), "spec", "template", "spec", "containers"),
                "containers");
        String baseImage = String.valueOf(get(containers.get(0), "image")).split(":")[0];
        List<Object> images = list(k.get("images"), "overlay images");
        assertEquals(baseImage, get(images.get(0), "name"), "the overlay must replace the base's image");
    }

    @Test
    void kustomizationListsEveryManifestAndEachParses() throws IOException {
        for (String file : resources) {
            assertTrue(Files.isRegularFile(K8S.resolve(file)), "kustomization.yaml lists " + file + ", which is missing");
            for (Map<String, Object> doc : MANIFESTS.get(file)) {
                for (String field : List.of("apiVersion", "kind", "metadata")) {
                    assertNotNull(doc.get(field), file + ": a document without " + field);
                }
                assertNotNull(get(doc, "metadata", "name"), file + ": a " + doc.get("kind") + " without metadata.name");
            }
        }
        try (Stream<Path> files = Files.list(K8S)) {
            Set<String> unlisted = files.map(p -> p.getFileName().toString())
                    .filter(f -> f.endsWith(".yaml") || f.endsWith(".yml"))
                    .filter(f -> !f.equals("kustomization.yaml") && !resources.contains(f))
                    .collect(Collectors.toCollection(TreeSet::new));
            assertTrue(unlisted.isEmpty(), "manifests not listed in kustomization.yaml resources: " + unlisted);
        }
    }

    @Test
    void probesUseTheQuarkusHealthPathsOnTheApplicationPort() {
        Map<String, Object> container = delayqContainer();
        int containerPort = containerPort(container, "http");
        assertEquals(Integer.parseInt(setting("quarkus.http.port")), containerPort,
                "containerPort 'http' must be quarkus.http.port");
        Map<String, String> paths = Map.of(
                "startupProbe", "/q/health/started",
                "livenessProbe", "/q/health/live",
                "readinessProbe", "/q/health/ready");
        paths.forEach((probe, path) -> {
            Map<String, Object> httpGet = map(container.get(probe), "Deployment delayq: " + probe);
            assertEquals(path, get(httpGet, "httpGet", "path"), probe + " path");
            assertEquals(containerPort, resolvePort(get(httpGet, "httpGet", "port"), container), probe + " port");
        });
    }

    @Test
    void serviceTargetsTheContainerPortAndSelectsOnlyDelayqPods() {
        Map<String, Object> service = find("Service", "delayq");
        Map<String, Object> port = map(list(get(service, "spec", "ports"), "Service delayq ports").get(0), "port");
        assertEquals(containerPort(delayqContainer(), "http"), resolvePort(port.get("targetPort"), delayqContainer()),
                "Service delayq targetPort must be the container's http port");
        Map<String, Object> selector = map(get(service, "spec", "selector"), "Service delayq selector");
        assertTrue(selects(selector, templateLabels(find("Deployment", "delayq"))),
                "Service delayq selector " + selector + " must match the Deployment's pods");
        assertFalse(selects(selector, templateLabels(find("StatefulSet", "delayq-redis"))),
                "Service delayq selector " + selector + " also matches the Redis pod");
    }

    @Test
    void prometheusScrapesTheMetricsEndpoint() {
        Map<String, Object> annotations = map(get(find("Deployment", "delayq"), "spec", "template", "metadata",
                "annotations"), "pod annotations");
        assertEquals("true", annotations.get("prometheus.io/scrape"));
        assertEquals("/q/metrics", annotations.get("prometheus.io/path"));
        assertEquals(String.valueOf(containerPort(delayqContainer(), "http")), annotations.get("prometheus.io/port"));
    }

    @Test
    void terminationGraceOutlastsShutdownDelayDrainAndRequeue() {
        Duration delay = duration(setting("quarkus.shutdown.delay"));
        Duration drain = duration(setting("delayq.drain.timeout"));
        // After the drain deadline the unfinished jobs are put back with Redis calls, each
        // bounded by delayq.redis-timeout: that is the least margin.
        Duration requeue = duration(setting("delayq.redis-timeout"));
        Object grace = get(find("Deployment", "delayq"), "spec", "template", "spec", "terminationGracePeriodSeconds");
        assertNotNull(grace, "Deployment delayq sets no terminationGracePeriodSeconds (the default 30 s is too short)");
        Duration needed = delay.plus(drain).plus(requeue);
        assertTrue(Duration.ofSeconds(((Number) grace).longValue()).compareTo(needed) > 0,
                "terminationGracePeriodSeconds " + grace + " must exceed shutdown delay " + seconds(delay)
                        + " + drain timeout " + seconds(drain) + " + requeue margin (delayq.redis-timeout) "
                        + seconds(requeue) + " = " + seconds(needed));
    }

    @Test
    void everyConfigMapAndSecretKeyIsARealProperty() {
        List<Property> delayq = delayqProperties();
        Map<String, Object> env = new LinkedHashMap<>(configMapData());
        env.putAll(map(get(find("Secret", "delayq"), "stringData"), "Secret delayq stringData"));
        List<String> wrong = new ArrayList<>();
        env.forEach((key, value) -> {
            if (!(value instanceof String)) {
                wrong.add(key + ": value " + value + " is not a string (quote it)");
            } else if (key.startsWith("DELAYQ_") && delayq.stream().noneMatch(p -> p.matchesEnv(key))) {
                wrong.add(key + ": no such property in DelayqConfig");
            } else if (key.startsWith("QUARKUS_") && QUARKUS_PROPERTIES.stream().noneMatch(p -> envName(p).equals(key))) {
                wrong.add(key + ": not among the Quarkus properties the manifests may set " + QUARKUS_PROPERTIES);
            } else if (!key.startsWith("DELAYQ_") && !key.startsWith("QUARKUS_")) {
                wrong.add(key + ": neither a delayq nor a Quarkus property");
            }
        });
        assertTrue(wrong.isEmpty(), "ConfigMap/Secret keys that the application would ignore:\n  "
                + String.join("\n  ", wrong));
    }

    @Test
    void delayqPropertyNamesComeFromDelayqConfig() {
        List<Property> delayq = delayqProperties();
        for (String real : List.of("DELAYQ_DRAIN_TIMEOUT", "DELAYQ_DISPATCH_CONCURRENCY", "DELAYQ_REDIS_TIMEOUT",
                "DELAYQ_API_MAX_PAYLOAD_BYTES", "DELAYQ_TOPICS_ORDERS_RETRY_INITIAL")) {
            assertTrue(delayq.stream().anyMatch(p -> p.matchesEnv(real)), real + " should be recognised");
        }
        for (String typo : List.of("DELAYQ_DRAIN_TIMEOT", "DELAYQ_DISPATCH", "DELAYQ_TOPICS_ORDERS_CONCURENCY")) {
            assertFalse(delayq.stream().anyMatch(p -> p.matchesEnv(typo)), typo + " should be rejected");
        }
        assertEquals("20s", delayq.stream().filter(p -> p.name().equals("delayq.drain.timeout")).findFirst()
                .orElseThrow().defaultValue());
    }

    @Test
    void allowedQuarkusPropertiesExistInTheExtensions() throws IOException {
        StringBuilder models = new StringBuilder();
        for (URL url : Collections.list(getClass().getClassLoader()
                .getResources("META-INF/quarkus-config-doc/quarkus-config-model.json"))) {
            try (InputStream in = url.openStream()) {
                models.append(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            }
        }
        assertFalse(models.isEmpty(), "no Quarkus config model on the test classpath");
        for (String property : QUARKUS_PROPERTIES) {
            assertTrue(models.indexOf('"' + property + '"') >= 0, property + " is not a property of any Quarkus extension");
        }
    }

    @Test
    void deploymentRunsThreeNonRootReplicasFromTheConfigMapAndSecret() {
        Map<String, Object> deployment = find("Deployment", "delayq");
        assertEquals(3, get(deployment, "spec", "replicas"), "Deployment delayq replicas");
        Map<String, Object> container = delayqContainer();
        List<String> envFrom = list(container.get("envFrom"), "envFrom").stream()
                .map(ref -> map(ref, "envFrom entry"))
                .map(ref -> ref.containsKey("configMapRef") ? "ConfigMap/" + get(ref, "configMapRef", "name")
                        : "Secret/" + get(ref, "secretRef", "name"))
                .toList();
        assertEquals(List.of("ConfigMap/delayq", "Secret/delayq"), envFrom, "Deployment delayq envFrom");
        assertEquals(true, get(deployment, "spec", "template", "spec", "securityContext", "runAsNonRoot"));
        assertEquals(false, get(container, "securityContext", "allowPrivilegeEscalation"));
        assertEquals(List.of("ALL"), get(container, "securityContext", "capabilities", "drop"));
    }

    @Test
    void pdbAndHpaTargetTheDeployment() {
        Map<String, String> podLabels = templateLabels(find("Deployment", "delayq"));
        Map<String, Object> pdbSelector = map(get(find("PodDisruptionBudget", "delayq"), "spec", "selector",
                "matchLabels"), "PodDisruptionBudget delayq selector");
        assertTrue(selects(pdbSelector, podLabels), "PDB selector " + pdbSelector + " must match " + podLabels);
        assertFalse(selects(pdbSelector, templateLabels(find("StatefulSet", "delayq-redis"))),
                "PDB selector " + pdbSelector + " also matches the Redis pod");
        Map<String, Object> hpa = find("HorizontalPodAutoscaler", "delayq");
        assertEquals(Map.of("apiVersion", "apps/v1", "kind", "Deployment", "name", "delayq"),
                get(hpa, "spec", "scaleTargetRef"), "HPA scaleTargetRef");
        assertEquals(3, get(hpa, "spec", "minReplicas"));
        assertEquals(10, get(hpa, "spec", "maxReplicas"));
    }

    @Test
    void redisKeepsAnAppendOnlyFileOnAVolumeBehindTheSecretsPassword() {
        Map<String, Object> redis = find("StatefulSet", "delayq-redis");
        Map<String, Object> container = map(list(get(redis, "spec", "template", "spec", "containers"),
                "Redis containers").get(0), "Redis container");
        List<Object> words = new ArrayList<>(list(container.getOrDefault("command", List.of()), "command"));
        words.addAll(list(container.getOrDefault("args", List.of()), "args"));
        String line = words.stream().map(String::valueOf).collect(Collectors.joining(" "));
        for (String option : List.of("--appendonly yes", "--appendfsync everysec")) {
            assertTrue(line.contains(option), "Redis must run with " + option + " (a bare yes is a YAML boolean): " + line);
        }
        Matcher requirepass = Pattern.compile("--requirepass \\$\\((\\w+)\\)").matcher(line);
        assertTrue(requirepass.find(), "Redis must take --requirepass $(VAR) from the Secret: " + line);
        Map<String, Object> passwordEnv = list(container.get("env"), "Redis env").stream().map(e -> map(e, "env"))
                .filter(e -> requirepass.group(1).equals(e.get("name"))).findFirst()
                .orElseThrow(() -> new AssertionError("Redis env has no " + requirepass.group(1)));
        assertEquals(Map.of("name", "delayq", "key", "QUARKUS_REDIS_PASSWORD"),
                get(passwordEnv, "valueFrom", "secretKeyRef"), "requirepass must be delayq's own Redis password");
        assertFalse(list(get(redis, "spec", "volumeClaimTemplates"), "volumeClaimTemplates").isEmpty(),
                "Redis StatefulSet needs a volumeClaimTemplate for its append-only file");
    }

    @Test
    void redisHostsPointAtTheRedisService() {
        URI hosts = URI.create(setting("quarkus.redis.hosts"));
        Map<String, Object> service = MANIFESTS.values().stream().flatMap(List::stream)
                .filter(d -> "Service".equals(d.get("kind")) && hosts.getHost().equals(get(d, "metadata", "name")))
                .findFirst().orElseThrow(() -> new AssertionError("quarkus.redis.hosts " + hosts
                        + " names no Service in k8s/ (redis.yaml's is delayq-redis)"));
        Map<String, Object> redis = find("StatefulSet", "delayq-redis");
        assertEquals(hosts.getHost(), get(redis, "spec", "serviceName"), "StatefulSet serviceName");
        assertTrue(list(get(service, "spec", "ports"), "ports").stream()
                .anyMatch(p -> Integer.valueOf(hosts.getPort()).equals(map(p, "port").get("port"))),
                "Service " + hosts.getHost() + " has no port " + hosts.getPort());
        assertTrue(selects(map(get(service, "spec", "selector"), "selector"), templateLabels(redis)),
                "Service " + hosts.getHost() + " must select the Redis pod");
    }

    // ---- autoscaling (k8s/autoscaling/) ------------------------------------------------------

    private static final Path AUTOSCALING = K8S.resolve("autoscaling");

    /** The KEDA ScaledObject has what KEDA's CRD requires and scales the Deployment on Prometheus queries. */
    @Test
    void kedaScaledObjectIsACompleteScaledObjectOfTheDeployment() throws IOException {
        Map<String, Object> so = only(AUTOSCALING.resolve("keda-scaledobject.yaml"));
        assertEquals("keda.sh/v1alpha1", so.get("apiVersion"));
        assertEquals("ScaledObject", so.get("kind"));
        assertNotNull(get(so, "metadata", "name"), "metadata.name");
        Map<String, Object> target = map(get(so, "spec", "scaleTargetRef"), "spec.scaleTargetRef");
        assertEquals("delayq", target.get("name"), "scaleTargetRef.name (required) must be the Deployment");
        assertEquals("Deployment", target.getOrDefault("kind", "Deployment"));
        assertEquals("apps/v1", target.getOrDefault("apiVersion", "apps/v1"));
        int min = (Integer) get(so, "spec", "minReplicaCount");
        int max = (Integer) get(so, "spec", "maxReplicaCount");
        assertTrue(min >= 2 && min <= max, "replicas " + min + ".." + max + ": at least two keep taking in a drain");
        List<Object> triggers = list(get(so, "spec", "triggers"), "spec.triggers (required)");
        assertFalse(triggers.isEmpty(), "no triggers");
        for (Object t : triggers) {
            Map<String, Object> trigger = map(t, "trigger");
            assertEquals("prometheus", trigger.get("type"));
            assertTrue(List.of("AverageValue", "Value").contains(trigger.getOrDefault("metricType", "AverageValue")),
                    "metricType " + trigger.get("metricType"));
            Map<String, Object> metadata = map(trigger.get("metadata"), "trigger metadata");
            for (String field : List.of("serverAddress", "query", "threshold")) {
                assertTrue(metadata.get(field) instanceof String s && !s.isBlank(),
                        "prometheus trigger metadata." + field + " must be a non-empty string: " + metadata.get(field));
            }
            Double.parseDouble((String) metadata.get("threshold"));
        }
        scaleDownOutlastsTheDrain("ScaledObject", get(so, "spec", "advanced", "horizontalPodAutoscalerConfig",
                "behavior", "scaleDown"));
    }

    /** The HPA on External metrics is a complete autoscaling/v2 HPA of the Deployment, served by the adapter's rules. */
    @Test
    void externalMetricsHpaIsACompleteAutoscalingV2HpaServedByTheAdapterRules() throws IOException {
        Map<String, Object> hpa = only(AUTOSCALING.resolve("hpa-external.yaml"));
        assertEquals("autoscaling/v2", hpa.get("apiVersion"));
        assertEquals("HorizontalPodAutoscaler", hpa.get("kind"));
        // Same name as the base's CPU HPA: applied as a patch of it (kustomization.yaml).
        assertEquals("delayq", get(hpa, "metadata", "name"));
        assertEquals(Map.of("apiVersion", "apps/v1", "kind", "Deployment", "name", "delayq"),
                get(hpa, "spec", "scaleTargetRef"), "scaleTargetRef (required: kind, name)");
        int max = (Integer) get(hpa, "spec", "maxReplicas");
        int min = (Integer) get(hpa, "spec", "minReplicas");
        assertTrue(min >= 2 && min <= max, "replicas " + min + ".." + max);
        Set<String> names = new TreeSet<>();
        for (Object m : list(get(hpa, "spec", "metrics"), "spec.metrics")) {
            Map<String, Object> metric = map(m, "metric");
            assertEquals("External", metric.get("type"));
            String name = (String) get(metric, "external", "metric", "name");
            assertNotNull(name, "external.metric.name (required)");
            names.add(name);
            String type = (String) get(metric, "external", "target", "type");
            String field = switch (String.valueOf(type)) {
                case "Value" -> "value";
                case "AverageValue" -> "averageValue";
                default -> fail("external.target.type must be Value or AverageValue for an External metric: " + type);
            };
            assertNotNull(get(metric, "external", "target", field), name + ": target." + field + " for type " + type);
        }
        scaleDownOutlastsTheDrain("HorizontalPodAutoscaler", get(hpa, "spec", "behavior", "scaleDown"));

        Map<String, Object> adapter = only(AUTOSCALING.resolve("prometheus-adapter-rules.yaml"));
        Set<String> served = new TreeSet<>();
        for (Object r : list(get(adapter, "rules", "external"), "rules.external")) {
            Map<String, Object> rule = map(r, "adapter rule");
            for (String field : List.of("seriesQuery", "metricsQuery")) {
                assertTrue(rule.get(field) instanceof String s && !s.isBlank(), "adapter rule " + field);
            }
            assertTrue(String.valueOf(rule.get("metricsQuery")).contains("<<.Series>>"), "metricsQuery uses <<.Series>>");
            served.add(String.valueOf(get(rule, "name", "as")));
        }
        assertTrue(served.containsAll(names), "the HPA asks for " + names + ", the adapter serves " + served);
    }

    /** The autoscaling directory is a kustomize Component that swaps the base's CPU HPA for KEDA's, and the example uses it. */
    @Test
    void autoscalingComponentReplacesTheCpuHpaAndTheServiceOverlayUsesIt() throws IOException {
        Map<String, Object> component = only(AUTOSCALING.resolve("kustomization.yaml"));
        assertEquals("Component", component.get("kind"));
        for (String file : list(component.get("resources"), "component resources").stream().map(String::valueOf).toList()) {
            assertTrue(Files.isRegularFile(AUTOSCALING.resolve(file)), "the component lists " + file + ", which is missing");
        }
        String patches = String.valueOf(component.get("patches"));
        assertTrue(patches.contains("$patch: delete") && patches.contains("HorizontalPodAutoscaler"),
                "the component must delete the base's CPU HPA (two autoscalers on one Deployment fight): " + patches);
        Path overlay = Path.of("..", "examples", "order-service", "k8s");
        List<String> components = list(load(overlay.resolve("kustomization.yaml")).get(0).get("components"),
                "overlay components");
        assertTrue(components.stream().anyMatch(c -> overlay.resolve(c).normalize().equals(AUTOSCALING.normalize())),
                "the example overlay should use k8s/autoscaling, uses " + components);
    }

    /**
     * Removing a replica costs its drain: readiness DOWN for the shutdown delay, up to the drain
     * timeout for running jobs, the requeue, all inside the termination grace. Scale-down must
     * wait longer than that between removals, and over a window longer still.
     */
    private static void scaleDownOutlastsTheDrain(String what, Object scaleDown) {
        Duration drain = duration(setting("delayq.drain.timeout"));
        Object grace = get(find("Deployment", "delayq"), "spec", "template", "spec", "terminationGracePeriodSeconds");
        long drainSeconds = drain.toSeconds() + ((Number) grace).longValue();
        Map<String, Object> down = map(scaleDown, what + " scaleDown behavior");
        Object window = down.get("stabilizationWindowSeconds");
        assertTrue(window instanceof Integer w && w > drainSeconds, what + ": scaleDown stabilizationWindowSeconds "
                + window + " must exceed drain timeout + termination grace = " + drainSeconds + " s");
        List<Object> policies = list(down.get("policies"), what + " scaleDown policies");
        assertFalse(policies.isEmpty(), what + ": scaleDown without policies may remove every extra pod at once");
        for (Object p : policies) {
            Map<String, Object> policy = map(p, "policy");
            assertEquals("Pods", policy.get("type"), what + ": scale down by pods, not percent: " + policy);
            assertTrue((Integer) policy.get("periodSeconds") > drainSeconds, what + ": a policy's periodSeconds "
                    + policy.get("periodSeconds") + " must exceed drain timeout + termination grace = " + drainSeconds + " s");
        }
    }

    private static Map<String, Object> only(Path path) throws IOException {
        List<Map<String, Object>> docs = load(path);
        assertEquals(1, docs.size(), path + ": one document");
        return docs.get(0);
    }

    // ---- the application's side ------------------------------------------------------------

    /** A delayq property, {@code *} standing for a map key (a topic name); its default if any. */
    record Property(String name, String defaultValue) {
        boolean matchesEnv(String env) {
            String[] parts = envName(name).split("\\*", -1);
            String regex = Stream.of(parts).map(Pattern::quote).collect(Collectors.joining("[A-Z0-9_]+"));
            return env.matches(regex);
        }
    }

    static List<Property> delayqProperties() {
        List<Property> properties = new ArrayList<>();
        collect(DelayqConfig.class, "delayq", properties);
        return properties;
    }

    /** Walks a config group the way SmallRye's mapping does: kebab-case names, @WithName, nested groups, maps. */
    private static void collect(Class<?> group, String prefix, List<Property> into) {
        for (Method m : group.getDeclaredMethods()) {
            if (Modifier.isStatic(m.getModifiers()) || m.isDefault() || m.isSynthetic() || m.getParameterCount() > 0) {
                continue;
            }
            WithName withName = m.getAnnotation(WithName.class);
            String name = m.isAnnotationPresent(WithParentName.class) ? prefix
                    : prefix + "." + (withName != null ? withName.value() : kebab(m.getName()));
            Type type = m.getGenericReturnType();
            if (type instanceof ParameterizedType p && (p.getRawType() == Map.class || p.getRawType() == Optional.class)) {
                Type[] args = p.getActualTypeArguments();
                Type element = args[args.length - 1];
                String elementName = p.getRawType() == Map.class ? name + ".*" : name;
                if (element instanceof Class<?> c && isGroup(c)) {
                    collect(c, elementName, into);
                } else {
                    into.add(new Property(elementName, null));
                }
            } else if (type instanceof Class<?> c && isGroup(c)) {
                collect(c, name, into);
            } else {
                WithDefault withDefault = m.getAnnotation(WithDefault.class);
                into.add(new Property(name, withDefault == null ? null : withDefault.value()));
            }
        }
    }

    private static boolean isGroup(Class<?> c) {
        return c.isInterface() && !c.getName().startsWith("java.");
    }

    private static String kebab(String method) {
        return method.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase();
    }

    /** The environment variable SmallRye Config reads a property from. */
    static String envName(String property) {
        return property.replaceAll("[^A-Za-z0-9*]", "_").toUpperCase();
    }

    /** The value a pod gets: the ConfigMap, else application.properties, else DelayqConfig's default. */
    private static String setting(String property) {
        Object fromConfigMap = configMapData().get(envName(property));
        if (fromConfigMap != null) {
            return fromConfigMap.toString();
        }
        Properties app = new Properties();
        try (Reader in = Files.newBufferedReader(APPLICATION_PROPERTIES)) {
            app.load(in);
        } catch (IOException e) {
            throw new AssertionError("cannot read " + APPLICATION_PROPERTIES, e);
        }
        String fromApp = app.getProperty("%prod." + property, app.getProperty(property));
        if (fromApp != null) {
            return fromApp;
        }
        return delayqProperties().stream().filter(p -> p.name().equals(property)).findFirst()
                .map(Property::defaultValue)
                .orElseThrow(() -> new AssertionError(property + " is set nowhere and has no default"));
    }

    /** A Duration the way Quarkus converts one: bare number = seconds, 500ms/20s/5m/1h/2d, or ISO-8601. */
    static Duration duration(String value) {
        String v = value.trim();
        Matcher m = Pattern.compile("(\\d+)(ms|s|m|h|d)?").matcher(v);
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            return switch (m.group(2) == null ? "s" : m.group(2)) {
                case "ms" -> Duration.ofMillis(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                case "d" -> Duration.ofDays(n);
                default -> Duration.ofSeconds(n);
            };
        }
        return Duration.parse(v.startsWith("P") ? v : "PT" + v);
    }

    private static String seconds(Duration d) {
        return d.toMillis() / 1000.0 + "s";
    }

    // ---- the manifests' side ------------------------------------------------------------------

    private static List<Map<String, Object>> load(Path path) throws IOException {
        List<Map<String, Object>> docs = new ArrayList<>();
        try (Reader in = Files.newBufferedReader(path)) {
            for (Object doc : new Yaml().loadAll(in)) {
                if (doc != null) {
                    docs.add(map(doc, path + ": a document that is not a mapping"));
                }
            }
        } catch (RuntimeException e) {
            throw new AssertionError(path + " does not parse: " + e.getMessage(), e);
        }
        assertFalse(docs.isEmpty(), path + " is empty");
        return docs;
    }

    private static Map<String, Object> find(String kind, String name) {
        return MANIFESTS.values().stream().flatMap(List::stream)
                .filter(d -> kind.equals(d.get("kind")) && name.equals(get(d, "metadata", "name")))
                .findFirst().orElseThrow(() -> new AssertionError("no " + kind + " " + name + " in k8s/"));
    }

    private static Map<String, Object> configMapData() {
        return map(get(find("ConfigMap", "delayq"), "data"), "ConfigMap delayq data");
    }

    private static Map<String, Object> delayqContainer() {
        return list(get(find("Deployment", "delayq"), "spec", "template", "spec", "containers"), "containers")
                .stream().map(c -> map(c, "container")).filter(c -> "delayq".equals(c.get("name"))).findFirst()
                .orElseThrow(() -> new AssertionError("Deployment delayq has no container named delayq"));
    }

    private static int containerPort(Map<String, Object> container, String name) {
        return list(container.get("ports"), "container ports").stream().map(p -> map(p, "port"))
                .filter(p -> name.equals(p.get("name"))).map(p -> (Integer) p.get("containerPort")).findFirst()
                .orElseThrow(() -> new AssertionError("container " + container.get("name") + " has no port named " + name));
    }

    /** A probe's or Service's port: a number, or the name of one of the container's ports. */
    private static int resolvePort(Object port, Map<String, Object> container) {
        return port instanceof Integer number ? number : containerPort(container, String.valueOf(port));
    }

    private static Map<String, String> templateLabels(Map<String, Object> workload) {
        Map<String, String> labels = new LinkedHashMap<>();
        map(get(workload, "spec", "template", "metadata", "labels"), "pod labels")
                .forEach((k, v) -> labels.put(k, String.valueOf(v)));
        return labels;
    }

    private static boolean selects(Map<String, Object> selector, Map<String, String> labels) {
        return !selector.isEmpty()
                && selector.entrySet().stream().allMatch(e -> String.valueOf(e.getValue()).equals(labels.get(e.getKey())));
    }

    /** The value at a path of keys in parsed YAML or JSON maps, null when any step is missing. */
    static Object get(Object node, String... path) {
        Object at = node;
        for (String key : path) {
            if (!(at instanceof Map<?, ?> m)) {
                return null;
            }
            at = m.get(key);
        }
        return at;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object node, String what) {
        if (node instanceof Map<?, ?> m) {
            return (Map<String, Object>) m;
        }
        return fail(what + ": expected a mapping, found " + node);
    }

    @SuppressWarnings("unchecked")
    private static <T> List<T> list(Object node, String what) {
        if (node instanceof List<?> l) {
            return (List<T>) l;
        }
        return fail(what + ": expected a list, found " + node);
    }
}
