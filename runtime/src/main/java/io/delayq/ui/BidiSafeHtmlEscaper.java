package io.delayq.ui;

import java.util.List;

import io.quarkus.qute.HtmlEscaper;
import io.quarkus.qute.Variant;

/**
 * Qute's HTML escaping, plus: every bidirectional control character of a value (a payload, an
 * id, an error) is written as visible text, {@code [U+202E]}. A right-to-left override inside a
 * payload would otherwise reorder what follows it on the page, so that an operator reads
 * {@code "amount": 1000} where the payload says something else, or a file name the wrong way
 * round. Escaped text cannot hide anything; it can still be read (and copied) as it is.
 */
final class BidiSafeHtmlEscaper extends HtmlEscaper {

    BidiSafeHtmlEscaper() {
        super(List.of(Variant.TEXT_HTML));
    }

    @Override
    protected String replacementFor(char c) {
        return isBidiControl(c) ? "[U+" + Integer.toHexString(c).toUpperCase(java.util.Locale.ROOT) + "]"
                : super.replacementFor(c);
    }

    /** ALM, LRM, RLM, the embeddings and overrides (LRE..RLO, PDF) and the isolates (LRI..PDI). */
    static boolean isBidiControl(char c) {
        return c == '\u061C' || c == '\u200E' || c == '\u200F' || c >= '\u202A' && c <= '\u202E'
                || c >= '\u2066' && c <= '\u2069';
    }
}
