package io.delayq.deployment;

import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import jakarta.enterprise.event.Observes;
import jakarta.enterprise.event.ObservesAsync;
import jakarta.enterprise.event.Reception;
import jakarta.enterprise.event.TransactionPhase;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.spi.DeploymentException;
import jakarta.ws.rs.Path;

import org.jboss.jandex.AnnotationInstance;
import org.jboss.jandex.AnnotationTarget;
import org.jboss.jandex.ClassInfo;
import org.jboss.jandex.DotName;
import org.jboss.jandex.IndexView;
import org.jboss.jandex.MethodInfo;
import org.jboss.jandex.MethodParameterInfo;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.delayq.core.JobValidator;
import io.delayq.dispatch.DelayqRecorder;
import io.delayq.ops.tracing.OtelJobTracing;
import io.delayq.security.DelayqAccessPolicy;
import io.delayq.service.AfterCommitEnqueue;
import io.quarkus.arc.deployment.AdditionalBeanBuildItem;
import io.quarkus.arc.deployment.BeanDiscoveryFinishedBuildItem;
import io.quarkus.arc.deployment.ValidationPhaseBuildItem;
import io.quarkus.arc.deployment.ValidationPhaseBuildItem.ValidationErrorBuildItem;
import io.quarkus.arc.processor.BuiltinScope;
import io.quarkus.arc.processor.ObserverInfo;
import io.quarkus.deployment.Capabilities;
import io.quarkus.deployment.Capability;
import io.quarkus.deployment.annotations.BuildProducer;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.annotations.ExecutionTime;
import io.quarkus.deployment.annotations.Record;
import io.quarkus.deployment.builditem.CombinedIndexBuildItem;
import io.quarkus.deployment.builditem.FeatureBuildItem;
import io.quarkus.deployment.builditem.IndexDependencyBuildItem;
import io.quarkus.deployment.builditem.RunTimeConfigurationDefaultBuildItem;
import io.quarkus.deployment.builditem.nativeimage.NativeImageResourcePatternsBuildItem;
import io.quarkus.vertx.http.security.AuthorizationPolicy;

/**
 * Build steps of the delayq extension: the feature, the runtime jar in the index, the
 * {@code @JobTopic} observers checked (recorded for runtime by {@link TopicObserverProcessor}),
 * the Lua scripts and dashboard templates in a native image, the REST API's and dashboard's
 * paths checked against the service's own, and delayq's resources checked for its access policy.
 */
class DelayqProcessor {
    static final String FEATURE = "delayq";
    private static final DotName JOB = DotName.createSimple(Job.class);
    private static final DotName JOB_TOPIC = DotName.createSimple(JobTopic.class);
    private static final DotName OBSERVES = DotName.createSimple(Observes.class);
    private static final DotName OBSERVES_ASYNC = DotName.createSimple(ObservesAsync.class);
    private static final DotName PATH = DotName.createSimple(Path.class);
    private static final DotName ANY = DotName.createSimple(Any.class);
    /** The root paths of delayq's REST resources (io.delayq.api). */
    private static final Set<String> API_ROOTS = Set.of("jobs", "topics", "schedules");
    private static final String API_PACKAGE = "io.delayq.api";
    /** The root path of delayq's dashboard, and its package. */
    private static final String UI_ROOT = "delayq";
    private static final String UI_PACKAGE = "io.delayq.ui";
    private static final DotName AUTHORIZATION_POLICY = DotName.createSimple(AuthorizationPolicy.class);
    /** The packages of delayq's own endpoints (the REST API, the dashboard), which its access rules guard. */
    private static final Set<String> GUARDED_PACKAGES = Set.of(API_PACKAGE, UI_PACKAGE);

    @BuildStep
    FeatureBuildItem feature() {
        return new FeatureBuildItem(FEATURE);
    }

    /** The runtime jar ships no Jandex index: index it so its beans, resources and config are found. */
    @BuildStep
    IndexDependencyBuildItem indexRuntime() {
        return new IndexDependencyBuildItem("io.delayq", "quarkus-delayq");
    }

    /**
     * Every {@code @JobTopic} must sit on the event parameter of an observer of {@link Job} and
     * name a valid topic, and every observer of {@link Job} must be one that delayq's event
     * reaches; anything else fails the build, naming the class and method.
     */
    @BuildStep
    void validateJobTopics(ValidationPhaseBuildItem validation, CombinedIndexBuildItem index,
            BeanDiscoveryFinishedBuildItem beans, BuildProducer<ValidationErrorBuildItem> errors) {
        List<Throwable> found = new ArrayList<>();
        for (AnnotationInstance a : index.getIndex().getAnnotations(JOB_TOPIC)) {
            String problem = check(a);
            if (problem != null) {
                found.add(new DeploymentException(problem));
            }
        }
        for (ObserverInfo o : beans.getObservers()) {
            String problem = o.getObserverMethod() != null && JOB.equals(o.getObservedType().name()) ? check(o) : null;
            if (problem != null) {
                found.add(new DeploymentException(problem));
            }
        }
        if (!found.isEmpty()) {
            errors.produce(new ValidationErrorBuildItem(found));
        }
    }

    /**
     * delayq fires each job with {@code @JobTopic("t")} only and acks it when the observers
     * return: an observer that this event would not notify (another qualifier, IF_EXISTS, a
     * transaction phase) would have its topic served and its jobs acked without running, and
     * an observer without {@code @JobTopic} would receive every topic's jobs.
     */
    private static String check(ObserverInfo o) {
        MethodInfo m = o.getObserverMethod();
        String where = "observer " + m.declaringClass().name() + "#" + m.name() + " of " + Job.class.getSimpleName();
        boolean topic = false;
        for (AnnotationInstance q : o.getQualifiers()) {
            if (JOB_TOPIC.equals(q.name())) {
                topic = true;
            } else if (!ANY.equals(q.name())) {
                return where + " has qualifier @" + q.name().withoutPackagePrefix()
                        + ": delayq fires jobs with @JobTopic only, so it would never be called; remove the qualifier";
            }
        }
        if (!topic) {
            return where + " has no @JobTopic: it would receive the jobs of every topic; name its topic, "
                    + "as in void close(@Observes @JobTopic(\"order-close\") Job job)";
        }
        if (o.getReception() == Reception.IF_EXISTS) {
            return where + " uses notifyObserver = IF_EXISTS: it would miss jobs while its bean does not exist; "
                    + "remove notifyObserver";
        }
        if (o.getTransactionPhase() != TransactionPhase.IN_PROGRESS) {
            return where + " waits for a transaction phase (" + o.getTransactionPhase()
                    + "): delayq fires jobs outside transactions; remove the during attribute";
        }
        return null;
    }

    private static String check(AnnotationInstance a) {
        AnnotationTarget target = a.target();
        String topic = a.value() == null ? "" : a.value().asString();
        if (target.kind() != AnnotationTarget.Kind.METHOD_PARAMETER) {
            return "@JobTopic(\"" + topic + "\") on " + describe(target)
                    + ": @JobTopic belongs on the event parameter of an observer, "
                    + "as in void close(@Observes @JobTopic(\"" + topic + "\") Job job)";
        }
        MethodParameterInfo param = target.asMethodParameter();
        MethodInfo method = param.method();
        String where = method.declaringClass().name() + "#" + method.name();
        if (!param.hasDeclaredAnnotation(OBSERVES) && !param.hasDeclaredAnnotation(OBSERVES_ASYNC)) {
            return "@JobTopic(\"" + topic + "\") on a parameter of " + where
                    + " that is not observed: add @Observes (or @ObservesAsync) to it, "
                    + "as in void close(@Observes @JobTopic(\"" + topic + "\") Job job)";
        }
        if (!JOB.equals(param.type().name())) {
            return "observer " + where + " of @JobTopic(\"" + topic + "\") observes " + param.type()
                    + ": a @JobTopic observer observes " + Job.class.getName();
        }
        if (!JobValidator.TOPIC.matcher(topic).matches()) {
            return "observer " + where + ": @JobTopic(\"" + topic + "\") must match " + JobValidator.TOPIC.pattern();
        }
        return null;
    }

    private static String describe(AnnotationTarget target) {
        return switch (target.kind()) {
            case CLASS -> "class " + target.asClass().name();
            case FIELD -> "field " + target.asField().declaringClass().name() + "#" + target.asField().name();
            case METHOD -> "method " + target.asMethod().declaringClass().name() + "#" + target.asMethod().name();
            default -> target.toString();
        };
    }

    /**
     * Takers, ackers, the heartbeat, the REST API and the service's own Redis calls share the
     * Redis client's pool: under a burst, callers should wait for a connection rather than fail.
     * Defaults only; the service's own settings win.
     */
    @BuildStep
    List<RunTimeConfigurationDefaultBuildItem> redisPoolDefaults() {
        return List.of(new RunTimeConfigurationDefaultBuildItem("quarkus.redis.max-pool-size", "16"),
                new RunTimeConfigurationDefaultBuildItem("quarkus.redis.max-pool-waiting", "4096"),
                new RunTimeConfigurationDefaultBuildItem("quarkus.redis.max-waiting-handlers", "4096"));
    }

    /**
     * Tracing only when the service has quarkus-opentelemetry: its tracer then carries each job's
     * trace from the enqueue to every attempt. Without it the default (no tracing) stays, and no
     * OpenTelemetry class is ever loaded.
     */
    @BuildStep
    void tracing(Capabilities capabilities, BuildProducer<AdditionalBeanBuildItem> beans,
            BuildProducer<RunTimeConfigurationDefaultBuildItem> defaults) {
        if (capabilities.isPresent(Capability.OPENTELEMETRY_TRACER)) {
            beans.produce(AdditionalBeanBuildItem.builder().addBeanClass(OtelJobTracing.class)
                    .setDefaultScope(BuiltinScope.SINGLETON.getName()).setUnremovable().build());
            // Every take, ack and safety-net poll is a Redis call: traced, each would be a trace of
            // its own, several per second per replica. A default only: a service may turn it back on.
            defaults.produce(new RunTimeConfigurationDefaultBuildItem("quarkus.otel.instrument.vertx-redis-client", "false"));
        }
    }

    /**
     * After-commit only when the service has a JTA transaction manager (quarkus-narayana-jta): an
     * enqueue inside a transaction is then sent when it commits. Without one no JTA class is ever
     * loaded, and the extension needs none to build.
     */
    @BuildStep
    void afterCommit(Capabilities capabilities, BuildProducer<AdditionalBeanBuildItem> beans) {
        if (capabilities.isPresent(Capability.TRANSACTIONS)) {
            beans.produce(AdditionalBeanBuildItem.builder().addBeanClass(AfterCommitEnqueue.class)
                    .setDefaultScope(BuiltinScope.APPLICATION.getName()).setUnremovable().build());
        }
    }

    @BuildStep
    @Record(ExecutionTime.RUNTIME_INIT)
    void warnOnBuildTimeOverrides(DelayqBuildConfig config, DelayqRecorder recorder) {
        recorder.warnOnBuildTimeOverrides(Map.of("delayq.api.enabled", config.api().enabled(),
                "delayq.devservices.enabled", config.devservices().enabled(), "delayq.ui.enabled", config.ui().enabled()));
    }

    /**
     * The Lua scripts and the dashboard's templates are read from the classpath at start-up: a
     * native image must carry them.
     */
    @BuildStep
    NativeImageResourcePatternsBuildItem luaScripts() {
        return NativeImageResourcePatternsBuildItem.builder().includeGlob("lua/*.lua").includeGlob("delayq-ui/*.html")
                .build();
    }

    /**
     * With the API on, a resource of the service whose root path is {@code /jobs} or
     * {@code /topics} would be merged with delayq's silently: fail the build and say what to do.
     */
    @BuildStep
    void checkApiPaths(DelayqBuildConfig config, CombinedIndexBuildItem index,
            BuildProducer<ValidationErrorBuildItem> errors,
            ValidationPhaseBuildItem validation) {
        Set<String> roots = new java.util.HashSet<>();
        if (config.api().enabled()) {
            roots.addAll(API_ROOTS);
        }
        if (config.ui().enabled()) {
            roots.add(UI_ROOT);
        }
        if (roots.isEmpty()) {
            return;
        }
        List<Throwable> clashes = new ArrayList<>();
        IndexView view = index.getIndex();
        for (AnnotationInstance a : view.getAnnotations(PATH)) {
            if (a.target().kind() != AnnotationTarget.Kind.CLASS || a.value() == null) {
                continue;
            }
            ClassInfo c = a.target().asClass();
            // Interfaces (REST clients of a delayq server, say) and abstract classes serve nothing.
            String pkg = c.name().packagePrefix();
            if (c.isInterface() || Modifier.isAbstract(c.flags()) || pkg != null
                    && (pkg.equals(API_PACKAGE) || pkg.equals(UI_PACKAGE))) {
                continue;
            }
            String root = firstSegment(a.value().asString());
            if (roots.contains(root)) {
                clashes.add(clash(c.name() + " (@Path(\"" + a.value().asString() + "\"))"));
            } else if (root.isEmpty()) {
                // A resource at "/" whose methods claim /jobs or /topics would be shadowed at run time.
                for (MethodInfo m : c.methods()) {
                    AnnotationInstance mp = m.declaredAnnotation(PATH);
                    if (mp != null && mp.value() != null && roots.contains(firstSegment(mp.value().asString()))) {
                        clashes.add(clash(c.name() + "#" + m.name() + " (@Path(\"" + mp.value().asString() + "\"))"));
                    }
                }
            }
        }
        if (!clashes.isEmpty()) {
            errors.produce(new ValidationErrorBuildItem(clashes));
        }
    }

    /**
     * Every resource of delayq's API and dashboard must carry
     * {@code @AuthorizationPolicy(name = DelayqAccessPolicy.NAME)}: without it its endpoints would
     * skip delayq's access rules and be open to anyone.
     */
    @BuildStep
    void checkAccessPolicy(CombinedIndexBuildItem index, ValidationPhaseBuildItem validation,
            BuildProducer<ValidationErrorBuildItem> errors) {
        List<Throwable> unguarded = new ArrayList<>();
        for (AnnotationInstance a : index.getIndex().getAnnotations(PATH)) {
            if (a.target().kind() != AnnotationTarget.Kind.CLASS) {
                continue;
            }
            ClassInfo c = a.target().asClass();
            if (c.isInterface() || Modifier.isAbstract(c.flags())
                    || !GUARDED_PACKAGES.contains(c.name().packagePrefix())) {
                continue;
            }
            AnnotationInstance policy = c.declaredAnnotation(AUTHORIZATION_POLICY);
            if (policy == null || !DelayqAccessPolicy.NAME.equals(policy.value("name").asString())) {
                unguarded.add(new DeploymentException("delayq resource " + c.name() + " has no @AuthorizationPolicy(name = "
                        + "DelayqAccessPolicy.NAME): its endpoints would skip delayq's access rules (io.delayq.security."
                        + "AccessRules); annotate the class"));
            }
        }
        if (!unguarded.isEmpty()) {
            errors.produce(new ValidationErrorBuildItem(unguarded));
        }
    }

    private static String firstSegment(String path) {
        return path.replaceAll("^/+", "").split("/", 2)[0].toLowerCase(Locale.ROOT);
    }

    private static DeploymentException clash(String what) {
        return new DeploymentException("resource " + what + " is mapped to a path that delayq's REST API serves "
                + "(/jobs, /topics, /schedules) or its dashboard (/delayq): move it, or turn them off with "
                + "delayq.api.enabled=false / delayq.ui.enabled=false");
    }
}
