package io.delayq.ui;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.time.Duration;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.JobState;
import io.delayq.store.Inspection;
import io.delayq.support.Browser;
import io.delayq.support.RedisTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.restassured.http.ContentType;

/** The dashboard with access control on: signing in through its login page, and what each role sees and may do. */
@QuarkusTest
@TestProfile(DashboardLoginProfile.class)
@QuarkusTestResource(RedisTestResource.class)
class DashboardRolesBrowserTest {
    private static final Duration PATIENCE = Duration.ofSeconds(20);

    @TestHTTPResource("/")
    URL base;

    @Inject
    Inspection store;

    private static void signIn(Browser b, String user, String password) {
        b.await(PATIENCE, x -> !x.all("input[name='j_username']").isEmpty());
        b.find("input[name='j_username']").sendKeys(user);
        b.find("input[name='j_password']").sendKeys(password);
        b.find("button[type='submit']").click();
    }

    @Test
    void aViewerSeesNoOperatorButtonsAndItsForgedOperatorRequestIsRefused() {
        UiObservers.FAIL.set(true);
        String id = "roles-" + System.nanoTime();
        given().auth().preemptive().basic("producer", "p-pass").contentType(ContentType.JSON)
                .body("{\"topic\":\"ui-dead\",\"id\":\"" + id + "\",\"maxAttempts\":1}").post("/jobs").then()
                .statusCode(201);
        Awaitility.await().atMost(PATIENCE)
                .until(() -> store.get("ui-dead", id).map(j -> j.state() == JobState.DEAD).orElse(false));

        try (Browser b = new Browser(base.toString()).open("/delayq/topics/ui-dead")) {
            signIn(b, "viewer", "v-pass"); // the login page, then back to the page asked for
            b.await(PATIENCE, x -> !x.all("tr[data-id='" + id + "']").isEmpty());
            assertTrue(b.find("header").getText().contains("viewer"));
            assertEquals(0, b.all("button[hx-post]").size(), "a viewer gets no action buttons");
            b.screenshot("viewer-topic");
            // A request it forges by hand, with the dashboard's header, from the same page: refused.
            Object status = b.driver.executeAsyncScript("const done = arguments[arguments.length - 1];"
                    + "fetch('/delayq/topics/ui-dead/dead/" + id + "/requeue', {method: 'POST', headers: {'X-Delayq-UI': '1'}})"
                    + ".then(r => done(r.status), e => done(String(e)));");
            assertEquals(403L, status);
            assertEquals(JobState.DEAD, store.get("ui-dead", id).orElseThrow().state(), "still dead");
        }
        try (Browser b = new Browser(base.toString()).open("/delayq/topics/ui-dead")) {
            signIn(b, "operator", "o-pass");
            b.await(PATIENCE, x -> !x.all("tr[data-id='" + id + "'] button").isEmpty());
            assertTrue(b.find("tr[data-id='" + id + "']").getText().contains("Requeue"), "an operator may requeue");
            b.screenshot("operator-topic");
        }
        // Nobody signed in: the pages send to the login page, the API answers 401.
        given().redirects().follow(false).get("/delayq").then().statusCode(302)
                .header("Location", org.hamcrest.Matchers.containsString("/delayq/login.html"));
        given().get("/topics").then().statusCode(401);
    }
}
