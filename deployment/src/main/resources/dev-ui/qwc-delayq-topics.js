import { LitElement, html, css } from 'lit';
import { JsonRpc } from 'jsonrpc';
import { columnBodyRenderer } from '@vaadin/grid/lit.js';
import '@vaadin/grid';
import '@vaadin/button';

/**
 * delayq's Dev UI page: every topic with what serves it on this replica (observer class#method
 * or HTTP target) and its scheduled / inflight / dead counts, refreshed every 2 s.
 */
export class QwcDelayqTopics extends LitElement {
    jsonRpc = new JsonRpc(this);

    static styles = css`
        :host { display: flex; flex-direction: column; gap: 10px; height: 100%; padding: 0 10px; }
        .bar { display: flex; justify-content: space-between; align-items: center; }
        code { font-size: 85%; }
        .error { color: var(--lumo-error-text-color); }
    `;

    static properties = {
        _topics: { state: true },
        _error: { state: true }
    };

    connectedCallback() {
        super.connectedCallback();
        this._refresh();
        this._timer = setInterval(() => this._refresh(), 2000);
    }

    disconnectedCallback() {
        clearInterval(this._timer);
        super.disconnectedCallback();
    }

    _refresh() {
        this.jsonRpc.topics()
            .then(r => { this._topics = r.result; this._error = null; })
            .catch(e => { this._error = (e && e.error && e.error.message) || 'cannot read topics (is Redis up?)'; });
    }

    render() {
        return html`
            <div class="bar">
                <span>${this._topics ? this._topics.length + ' topic(s)' : 'loading...'}</span>
                <vaadin-button @click=${() => this._refresh()}>Refresh</vaadin-button>
            </div>
            ${this._error ? html`<div class="error">${this._error}</div>` : ''}
            <vaadin-grid .items=${this._topics || []} theme="row-stripes" all-rows-visible>
                <vaadin-grid-sort-column path="topic" header="Topic" auto-width></vaadin-grid-sort-column>
                <vaadin-grid-column header="Served by" auto-width
                    ${columnBodyRenderer(t => html`<code>${t.servedBy}</code>`, [])}></vaadin-grid-column>
                <vaadin-grid-sort-column path="scheduled" header="Scheduled" auto-width></vaadin-grid-sort-column>
                <vaadin-grid-sort-column path="inflight" header="Inflight" auto-width></vaadin-grid-sort-column>
                <vaadin-grid-sort-column path="dead" header="Dead" auto-width></vaadin-grid-sort-column>
                <vaadin-grid-column path="nextDueAt" header="Next due" auto-width></vaadin-grid-column>
            </vaadin-grid>`;
    }
}
customElements.define('qwc-delayq-topics', QwcDelayqTopics);
