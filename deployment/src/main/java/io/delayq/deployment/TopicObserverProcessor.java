package io.delayq.deployment;

import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import jakarta.enterprise.inject.spi.DeploymentException;
import jakarta.enterprise.inject.spi.EventMetadata;
import jakarta.enterprise.invoke.Invoker;

import org.jboss.jandex.AnnotationInstance;
import org.jboss.jandex.DotName;
import org.jboss.jandex.MethodInfo;
import org.jboss.jandex.Type;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.delayq.dispatch.DelayqRecorder;
import io.delayq.dispatch.TopicObserver;
import io.quarkus.arc.deployment.BeanDiscoveryFinishedBuildItem;
import io.quarkus.arc.deployment.InvokerFactoryBuildItem;
import io.quarkus.arc.deployment.UnremovableBeanBuildItem;
import io.quarkus.arc.deployment.ValidationPhaseBuildItem.ValidationErrorBuildItem;
import io.quarkus.arc.processor.InvokerBuilder;
import io.quarkus.arc.processor.ObserverInfo;
import io.quarkus.deployment.annotations.BuildProducer;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.annotations.ExecutionTime;
import io.quarkus.deployment.annotations.Record;
import io.quarkus.deployment.recording.RecorderContext;
import io.quarkus.runtime.RuntimeValue;

/**
 * The {@code @JobTopic} observers, as ArC kept them (so an observer of a bean that was vetoed or
 * excluded is not counted as serving a topic), recorded for the runtime. An observer that returns
 * {@code Uni} or {@code CompletionStage} is reactive: its job is acked when that completes. CDI
 * ignores what an observer returns, so delayq calls it through an ArC invoker built here (no
 * reflection, native-safe) instead of firing the event, and it must be alone on its topic: fired
 * with the others, it would be called a second time and its {@code Uni} never subscribed.
 */
class TopicObserverProcessor {
    private static final DotName JOB = DotName.createSimple(Job.class);
    private static final DotName JOB_TOPIC = DotName.createSimple(JobTopic.class);
    private static final DotName EVENT_METADATA = DotName.createSimple(EventMetadata.class);
    private static final DotName UNI = DotName.createSimple("io.smallrye.mutiny.Uni");
    private static final DotName COMPLETION_STAGE = DotName.createSimple("java.util.concurrent.CompletionStage");
    private static final DotName COMPLETABLE_FUTURE = DotName.createSimple("java.util.concurrent.CompletableFuture");

    /**
     * Finds the observers and builds the invokers of the reactive ones. Invokers must be built
     * before ArC validates the deployment (which prepares them for generation): producing the
     * {@link UnremovableBeanBuildItem}s that ArC's validation consumes orders this step before it
     * (and the beans an invoker looks up must stay anyway).
     */
    @BuildStep
    void topicObservers(BeanDiscoveryFinishedBuildItem beans, InvokerFactoryBuildItem invokers,
            BuildProducer<TopicObserverBuildItem> found, BuildProducer<UnremovableBeanBuildItem> unremovable,
            BuildProducer<ValidationErrorBuildItem> errors) {
        List<Throwable> problems = new ArrayList<>();
        List<ObserverInfo> observers = new ArrayList<>();
        for (ObserverInfo o : beans.getObservers()) {
            if (JOB.equals(o.getObservedType().name()) && o.getObserverMethod() != null && topicOf(o) != null) {
                observers.add(o); // without @JobTopic: a build error (DelayqProcessor.validateJobTopics)
            }
        }
        Map<String, List<ObserverInfo>> byTopic = observers.stream()
                .collect(Collectors.groupingBy(TopicObserverProcessor::topicOf, TreeMap::new, Collectors.toList()));
        byTopic.forEach((topic, list) -> {
            List<ObserverInfo> reactive = list.stream().filter(o -> isReactive(o.getObserverMethod())).toList();
            if (!reactive.isEmpty() && list.size() > 1) {
                problems.add(new DeploymentException("topic " + topic + " has a reactive observer ("
                        + reactive.stream().map(TopicObserverProcessor::where).collect(Collectors.joining(", "))
                        + ") and other observers (" + list.stream().filter(o -> !reactive.contains(o))
                                .map(TopicObserverProcessor::where).collect(Collectors.joining(", "))
                        + "): a reactive observer, acked when its Uni or CompletionStage completes, must be its topic's"
                        + " only observer; merge them into one, or give them topics of their own"));
            }
        });
        for (ObserverInfo o : observers) {
            MethodInfo m = o.getObserverMethod();
            String problem = check(o);
            if (problem != null) {
                problems.add(new DeploymentException(problem));
                continue;
            }
            int event = o.getEventParameter().position();
            TopicObserverBuildItem item;
            if (isReactive(m)) {
                InvokerBuilder invoker = invokers.createInvoker(o.getDeclaringBean(), m);
                if (!Modifier.isStatic(m.flags())) {
                    invoker.withInstanceLookup();
                }
                for (int i = 0; i < m.parametersCount(); i++) {
                    if (i != event) {
                        invoker.withArgumentLookup(i); // injected like an observer's other parameters
                    }
                }
                item = new TopicObserverBuildItem(topicOf(o), m.declaringClass().name().toString(), m.name(), false,
                        invoker.build(), event, m.parametersCount());
                unremovable.produce(UnremovableBeanBuildItem.beanTypes(o.getDeclaringBean().getBeanClass()));
            } else {
                item = new TopicObserverBuildItem(topicOf(o), m.declaringClass().name().toString(), m.name(),
                        o.isAsync(), null, event, m.parametersCount());
            }
            found.produce(item);
        }
        if (!problems.isEmpty()) {
            errors.produce(new ValidationErrorBuildItem(problems));
        }
    }

    /** What a {@code @JobTopic} observer may return, and how a reactive one may be declared. */
    private static String check(ObserverInfo o) {
        MethodInfo m = o.getObserverMethod();
        Type returned = m.returnType();
        if (returned.kind() != Type.Kind.VOID && !isReactive(m)) {
            return "observer " + where(o) + " of " + Job.class.getSimpleName() + " returns " + returned
                    + ": a @JobTopic observer returns void, or Uni<Void> or CompletionStage<Void> to be acked when"
                    + " that completes";
        }
        if (!isReactive(m)) {
            return null;
        }
        if (o.isAsync()) {
            return "observer " + where(o) + " returns " + returned + " and uses @ObservesAsync: CDI ignores what an"
                    + " asynchronous observer returns; a reactive observer uses @Observes, as in"
                    + " Uni<Void> close(@Observes @JobTopic(\"" + topicOf(o) + "\") Job job)";
        }
        if (Modifier.isPrivate(m.flags())) {
            return "observer " + where(o) + " returns " + returned + " and is private: delayq calls a reactive"
                    + " observer through an invoker, which cannot reach a private method; make it package-private";
        }
        for (Type p : m.parameterTypes()) {
            if (EVENT_METADATA.equals(p.name())) {
                return "observer " + where(o) + " returns " + returned + " and takes EventMetadata: a reactive"
                        + " observer is not notified through a CDI event, so there is no event metadata; remove it";
            }
        }
        return null;
    }

    private static boolean isReactive(MethodInfo m) {
        DotName returned = m.returnType().name();
        return UNI.equals(returned) || COMPLETION_STAGE.equals(returned) || COMPLETABLE_FUTURE.equals(returned);
    }

    private static String topicOf(ObserverInfo o) {
        return o.getQualifiers().stream().filter(q -> JOB_TOPIC.equals(q.name())).findFirst()
                .map(AnnotationInstance::value).map(v -> v.asString()).orElse(null);
    }

    private static String where(ObserverInfo o) {
        return o.getObserverMethod().declaringClass().name() + "#" + o.getObserverMethod().name();
    }

    /** The observers, reactive ones with an instance of their invoker, for the runtime ({@code TopicObservers}). */
    @BuildStep
    @Record(ExecutionTime.STATIC_INIT)
    void recordTopicObservers(List<TopicObserverBuildItem> found, DelayqRecorder recorder, RecorderContext context) {
        List<TopicObserver> observers = new ArrayList<>();
        for (TopicObserverBuildItem o : found) {
            RuntimeValue<Invoker<Object, Object>> invoker = o.invoker == null ? null
                    : context.newInstance(o.invoker.getClassName());
            observers.add(new TopicObserver(o.topic, o.declaringClass, o.method, o.async, invoker, o.eventPosition,
                    o.parameterCount));
        }
        recorder.topicObservers(observers);
    }
}
