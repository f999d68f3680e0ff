package io.delayq.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The document's paths include {@code quarkus.rest.path}: the contract's table names them without it. */
class OpenApiContractTest {

    @Test
    void pathsUnderAnotherRestRootAreTheApisOwn() {
        assertEquals("/jobs/{topic}/{id}", OpenApiContract.relative("/api/jobs/{topic}/{id}", "/api"));
        assertEquals("/jobs/{topic}/{id}", OpenApiContract.relative("/api/jobs/{topic}/{id}", "api/"));
        assertEquals("/jobs", OpenApiContract.relative("/jobs", "/"));
        assertEquals("/jobs", OpenApiContract.relative("/jobs", "/" + "/" + "/"), "root-path / and rest path /");
        assertEquals("/jobs/{topic}", OpenApiContract.relative("/svc/api/jobs/{topic}", "/svc/" + "/api"),
                "root-path /svc/ and rest path /api");
        assertEquals("/apix/jobs", OpenApiContract.relative("/apix/jobs", "/api"), "a root is a whole segment");
        assertTrue(OpenApiContract.isDelayqPath(OpenApiContract.relative("/api/topics", "/api")));
        assertTrue(OpenApiContract.find("GET", OpenApiContract.relative("/api/jobs/{topic}/{id}", "/api")).isPresent());
        assertFalse(OpenApiContract.isDelayqPath(OpenApiContract.relative("/q/health", "/api")));
    }
}
