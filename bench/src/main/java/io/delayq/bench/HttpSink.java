package io.delayq.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;

import com.sun.net.httpserver.HttpServer;

/**
 * The in-process receiver of the topics scenario: records the job (by its id header) in the
 * benchmark's recorder and answers 204. Many topics and their one-topic reference post here alike.
 */
final class HttpSink {
    private final HttpServer server;
    volatile Recorder recorder;

    HttpSink() {
        try {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 1024);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        server.createContext("/", ex -> {
            Recorder r = recorder;
            if (r != null) {
                r.record(ex.getRequestHeaders().getFirst("X-Delayq-Job-Id"));
            }
            ex.getRequestBody().readAllBytes();
            ex.sendResponseHeaders(204, -1);
            ex.close();
        });
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.start();
    }

    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/";
    }
}
