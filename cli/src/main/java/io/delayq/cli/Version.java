package io.delayq.cli;

import picocli.CommandLine.IVersionProvider;

/** {@code delayq --version}: the version of the jar (its manifest), else "development". */
public class Version implements IVersionProvider {
    @Override
    public String[] getVersion() {
        String v = Delayq.class.getPackage().getImplementationVersion();
        return new String[] { "delayq " + (v == null ? "(development build)" : v) };
    }
}
