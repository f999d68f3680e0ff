package io.delayq.support;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;

import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * A real headless Chromium (Debian's {@code chromium} and {@code chromium-driver}; nothing is
 * downloaded) for the dashboard's tests. Each test saves screenshots under
 * {@code target/screenshots}.
 */
public final class Browser implements AutoCloseable {
    public final ChromeDriver driver;
    private final String base;

    public Browser(String base) {
        ChromeOptions options = new ChromeOptions();
        options.setBinary(new File(System.getProperty("delayq.test.chromium", "/usr/bin/chromium")));
        options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000",
                "--disable-gpu");
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(new File(System.getProperty("delayq.test.chromedriver", "/usr/bin/chromedriver")))
                .usingAnyFreePort().build();
        this.driver = new ChromeDriver(service, options);
        this.base = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
    }

    public Browser open(String path) {
        driver.get(base + path);
        return this;
    }

    public WebElement find(String css) {
        return driver.findElement(By.cssSelector(css));
    }

    public java.util.List<WebElement> all(String css) {
        return driver.findElements(By.cssSelector(css));
    }

    /** Waits (polling the page, which htmx refreshes) until {@code condition} holds. */
    public void await(Duration atMost, java.util.function.Function<Browser, Boolean> condition) {
        new WebDriverWait(driver, atMost, Duration.ofMillis(100)).ignoring(RuntimeException.class)
                .until(d -> condition.apply(this));
    }

    /** Saves what the browser shows as target/screenshots/{name}.png. */
    public Path screenshot(String name) {
        try {
            Path dir = Path.of("target", "screenshots");
            Files.createDirectories(dir);
            Path to = dir.resolve(name + ".png");
            File shot = ((TakesScreenshot) driver).getScreenshotAs(OutputType.FILE);
            Files.copy(shot.toPath(), to, StandardCopyOption.REPLACE_EXISTING);
            return to;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        driver.quit();
    }
}
