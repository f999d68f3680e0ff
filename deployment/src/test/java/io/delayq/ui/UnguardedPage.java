package io.delayq.ui;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;

/** A dashboard resource that forgot delayq's access policy (UnguardedDelayqResourceFailsBuildTest). */
@Path("/delayq/unguarded")
public class UnguardedPage {
    @GET
    public String page() {
        return "<p>open to anyone</p>";
    }
}
