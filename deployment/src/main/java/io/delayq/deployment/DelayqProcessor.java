package io.delayq.deployment;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import jakarta.enterprise.event.Observes;
import jakarta.enterprise.event.ObservesAsync;
import jakarta.enterprise.inject.spi.DeploymentException;
import jakarta.ws.rs.Path;

import org.jboss.jandex.AnnotationInstance;
import org.jboss.jandex.AnnotationTarget;
import org.jboss.jandex.ClassInfo;
import org.jboss.jandex.DotName;
import org.jboss.jandex.IndexView;
import org.jboss.jandex.MethodInfo;
import org.jboss.jandex.MethodParameterInfo;
import org.jboss.logging.Logger;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.delayq.core.JobValidator;
import io.delayq.dispatch.DelayqRecorder;
import io.delayq.dispatch.TopicObserver;
import io.quarkus.arc.deployment.BeanDiscoveryFinishedBuildItem;
import io.quarkus.arc.deployment.ValidationPhaseBuildItem;
import io.quarkus.arc.deployment.ValidationPhaseBuildItem.ValidationErrorBuildItem;
import io.quarkus.arc.processor.ObserverInfo;
import io.quarkus.deployment.annotations.BuildProducer;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.annotations.ExecutionTime;
import io.quarkus.deployment.annotations.Record;
import io.quarkus.deployment.builditem.CombinedIndexBuildItem;
import io.quarkus.deployment.builditem.FeatureBuildItem;
import io.quarkus.deployment.builditem.IndexDependencyBuildItem;
import io.quarkus.deployment.builditem.RunTimeConfigurationDefaultBuildItem;
import io.quarkus.deployment.builditem.nativeimage.NativeImageResourcePatternsBuildItem;

/**
 * Build steps of the delayq extension: the feature, the runtime jar in the index, the
 * {@code @JobTopic} observers (checked, then recorded for runtime), the Lua scripts in a native
 * image, and the REST API's paths checked against the service's own.
 */
class DelayqProcessor {
    static final String FEATURE = "delayq";
    private static final Logger LOG = Logger.getLogger(DelayqProcessor.class);
    private static final DotName JOB = DotName.createSimple(Job.class);
    private static final DotName JOB_TOPIC = DotName.createSimple(JobTopic.class);
    private static final DotName OBSERVES = DotName.createSimple(Observes.class);
    private static final DotName OBSERVES_ASYNC = DotName.createSimple(ObservesAsync.class);
    private static final DotName PATH = DotName.createSimple(Path.class);
    /** The root paths of delayq's REST resources (io.delayq.api). */
    private static final Set<String> API_ROOTS = Set.of("jobs", "topics");
    private static final String API_PACKAGE = "io.delayq.api";

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
     * name a valid topic; anything else fails the build, naming the class and method.
     */
    @BuildStep
    void validateJobTopics(ValidationPhaseBuildItem validation, CombinedIndexBuildItem index,
            BuildProducer<ValidationErrorBuildItem> errors) {
        List<Throwable> found = new ArrayList<>();
        for (AnnotationInstance a : index.getIndex().getAnnotations(JOB_TOPIC)) {
            String problem = check(a);
            if (problem != null) {
                found.add(new DeploymentException(problem));
            }
        }
        if (!found.isEmpty()) {
            errors.produce(new ValidationErrorBuildItem(found));
        }
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
     * The observers of {@code @JobTopic} jobs, as ArC kept them (so an observer of a bean that
     * was vetoed or excluded is not counted as serving a topic), recorded for the runtime.
     */
    @BuildStep
    @Record(ExecutionTime.STATIC_INIT)
    void recordTopicObservers(BeanDiscoveryFinishedBuildItem beans, DelayqRecorder recorder) {
        List<TopicObserver> observers = new ArrayList<>();
        for (ObserverInfo o : beans.getObservers()) {
            if (!JOB.equals(o.getObservedType().name()) || o.getObserverMethod() == null) {
                continue;
            }
            AnnotationInstance topic = o.getQualifiers().stream().filter(q -> JOB_TOPIC.equals(q.name())).findFirst()
                    .orElse(null);
            MethodInfo m = o.getObserverMethod();
            if (topic == null) {
                LOG.warnf("observer %s#%s of Job has no @JobTopic and receives no job: name its topic with @JobTopic(\"...\")",
                        m.declaringClass().name(), m.name());
                continue;
            }
            observers.add(new TopicObserver(topic.value().asString(), m.declaringClass().name().toString(), m.name(),
                    o.isAsync()));
        }
        recorder.topicObservers(observers);
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

    /** The Lua scripts are read from the classpath at start-up: a native image must carry them. */
    @BuildStep
    NativeImageResourcePatternsBuildItem luaScripts() {
        return NativeImageResourcePatternsBuildItem.builder().includeGlob("lua/*.lua").build();
    }

    /**
     * With the API on, a resource of the service whose root path is {@code /jobs} or
     * {@code /topics} would be merged with delayq's silently: fail the build and say what to do.
     */
    @BuildStep
    void checkApiPaths(DelayqBuildTimeConfig config, CombinedIndexBuildItem index,
            BuildProducer<ValidationErrorBuildItem> errors,
            ValidationPhaseBuildItem validation) {
        if (!config.api().enabled()) {
            return;
        }
        List<Throwable> clashes = new ArrayList<>();
        IndexView view = index.getIndex();
        for (AnnotationInstance a : view.getAnnotations(PATH)) {
            if (a.target().kind() != AnnotationTarget.Kind.CLASS || a.value() == null) {
                continue;
            }
            ClassInfo c = a.target().asClass();
            if (c.name().packagePrefix() != null && c.name().packagePrefix().equals(API_PACKAGE)) {
                continue;
            }
            String root = a.value().asString().replaceAll("^/+", "").split("/", 2)[0].toLowerCase(Locale.ROOT);
            if (API_ROOTS.contains(root)) {
                clashes.add(new DeploymentException("resource " + c.name() + " is mapped to @Path(\"" + a.value().asString()
                        + "\"), which delayq's REST API serves (/jobs, /topics): move the resource, or turn "
                        + "delayq's API off with delayq.api.enabled=false"));
            }
        }
        if (!clashes.isEmpty()) {
            errors.produce(new ValidationErrorBuildItem(clashes));
        }
    }
}
