package io.delayq.api;

import java.io.IOException;
import java.io.InputStream;
import java.lang.annotation.Annotation;
import java.lang.reflect.Type;
import java.util.List;

import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.MultivaluedMap;
import jakarta.ws.rs.ext.MessageBodyReader;
import jakarta.ws.rs.ext.Provider;

import io.delayq.core.NewJob;

/**
 * The body of {@code POST /jobs} ({@link #one}) or {@code POST /jobs/batch}, parsed by
 * {@link JobBodyParser} from the request's bytes where RESTEasy reads bodies: on a worker thread
 * when the body is larger than its input buffer (its stream of bytes still arriving blocks), on
 * the event loop otherwise. A body that breaks a rule is kept as its error, thrown by
 * {@link #jobs()} in the resource, whose problem mapping answers it.
 */
@org.eclipse.microprofile.openapi.annotations.media.Schema(hidden = true)
public record EnqueueBody(List<NewJob> parsed, RuntimeException error) {
    /** The jobs, or the body's error. */
    public List<NewJob> jobs() {
        if (error != null) {
            throw error;
        }
        return parsed;
    }

    /** The body of {@code POST /jobs}. */
    @org.eclipse.microprofile.openapi.annotations.media.Schema(hidden = true)
    public record One(EnqueueBody body) {
    }

    /** Reads both kinds; every other body is left to the readers that were there. */
    @Provider
    public static class Reader implements MessageBodyReader<Object> {
        private final JobBodyParser parser;

        public Reader(JobBodyParser parser) {
            this.parser = parser;
        }

        @Override
        public boolean isReadable(Class<?> type, Type generic, Annotation[] annotations, MediaType media) {
            return type == EnqueueBody.class || type == One.class;
        }

        @Override
        public Object readFrom(Class<Object> type, Type generic, Annotation[] annotations, MediaType media,
                MultivaluedMap<String, String> headers, InputStream in) throws IOException {
            boolean one = (Class<?>) type == One.class;
            EnqueueBody body;
            try {
                body = new EnqueueBody(one ? List.of(parser.one(in, media)) : parser.batch(in, media), null);
            } catch (RuntimeException e) {
                body = new EnqueueBody(null, e);
            }
            return one ? new One(body) : body;
        }
    }
}
