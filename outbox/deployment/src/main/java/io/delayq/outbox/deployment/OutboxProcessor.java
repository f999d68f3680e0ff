package io.delayq.outbox.deployment;

import io.delayq.outbox.OutboxDataSource;
import io.delayq.outbox.OutboxEnqueue;
import io.delayq.outbox.OutboxReadiness;
import io.delayq.outbox.OutboxRelay;
import io.delayq.outbox.OutboxStatus;
import io.quarkus.arc.deployment.AdditionalBeanBuildItem;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.builditem.FeatureBuildItem;

/** The transactional outbox's beans: the extension finds {@link OutboxEnqueue} as its TransactionalEnqueue. */
class OutboxProcessor {
    private static final String FEATURE = "delayq-outbox";

    @BuildStep
    FeatureBuildItem feature() {
        return new FeatureBuildItem(FEATURE);
    }

    @BuildStep
    AdditionalBeanBuildItem beans() {
        return AdditionalBeanBuildItem.builder().addBeanClasses(OutboxDataSource.class, OutboxEnqueue.class, OutboxRelay.class,
                OutboxStatus.class, OutboxReadiness.class).setUnremovable().build();
    }
}
