package io.delayq.outbox;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.Default;
import jakarta.enterprise.inject.Instance;

import io.agroal.api.AgroalDataSource;
import io.quarkus.agroal.DataSource;

/** The Agroal datasource of {@code delayq.outbox.datasource} (unset: the default one). */
@ApplicationScoped
public class OutboxDataSource {
    private final AgroalDataSource dataSource;

    public OutboxDataSource(@Any Instance<AgroalDataSource> all, OutboxConfig config) {
        Instance<AgroalDataSource> chosen = config.datasource().isPresent()
                ? all.select(new DataSource.DataSourceLiteral(config.datasource().get()))
                : all.select(Default.Literal.INSTANCE);
        if (!chosen.isResolvable()) {
            throw new IllegalStateException("delayq.transactions=outbox needs a JDBC datasource: "
                    + config.datasource().map(n -> "no datasource named '" + n + "' (delayq.outbox.datasource)")
                            .orElse("no default datasource (quarkus.datasource.*)"));
        }
        this.dataSource = chosen.get();
    }

    AgroalDataSource get() {
        return dataSource;
    }
}
