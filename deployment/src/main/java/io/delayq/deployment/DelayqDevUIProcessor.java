package io.delayq.deployment;

import io.delayq.ops.devui.DelayqJsonRpcService;
import io.quarkus.deployment.IsLocalDevelopment;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.devui.spi.JsonRPCProvidersBuildItem;
import io.quarkus.devui.spi.page.CardPageBuildItem;
import io.quarkus.devui.spi.page.Page;

/** The delayq card of the Dev UI ({@code /q/dev-ui}): topics, what serves them, their counts; a link to the dashboard. */
class DelayqDevUIProcessor {

    @BuildStep(onlyIf = IsLocalDevelopment.class)
    CardPageBuildItem card(DelayqBuildConfig config) {
        CardPageBuildItem card = new CardPageBuildItem();
        card.addPage(Page.webComponentPageBuilder()
                .title("Topics")
                .icon("font-awesome-solid:clock")
                .componentLink("qwc-delayq-topics.js"));
        if (config.ui().enabled()) {
            // The operators' dashboard, in a tab of its own (it is a whole application page).
            card.addPage(Page.externalPageBuilder("Dashboard")
                    .icon("font-awesome-solid:gauge")
                    .url("/delayq", "/delayq")
                    .doNotEmbed());
        }
        return card;
    }

    @BuildStep(onlyIf = IsLocalDevelopment.class)
    JsonRPCProvidersBuildItem rpc() {
        return new JsonRPCProvidersBuildItem(DelayqJsonRpcService.class);
    }
}
