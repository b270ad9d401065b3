// The Fuse Results page's only script (src/panelHtml.ts loads it with the page's
// nonce). It swaps in each new <main> the extension sends (src/panel.ts), so that
// an update keeps the frame and the scroll position, and asks for the current one
// whenever the page is (re)loaded, e.g. when a hidden panel is shown again; a click
// on a relation's tuple or a small tensor's cell asks for its why.
(function () {
  const vscode = acquireVsCodeApi();
  window.addEventListener('message', (event) => {
    const data = event.data;
    if (!data || data.type !== 'render' || typeof data.main !== 'string') {
      return;
    }
    const old = document.getElementById('fuse-results');
    const next = document.createElement('template');
    next.innerHTML = data.main;
    const main = next.content.firstElementChild;
    if (!old || !main) {
      return;
    }
    main.dataset.shownMs = String(Date.now());  // when this update reached the page
    old.replaceWith(main);
    const focus = data.focus && document.getElementById(String(data.focus));
    if (focus) {
      focus.scrollIntoView({ block: 'start' });  // e.g. Explain's graph
    }
  });
  // a relation's tuple clicked: its why (`Ancestor(Alice, Bob)`: the export's name and
  // the tuple as the page shows it), opened by the extension (fuse.why)
  // a small tensor's cell clicked: the why of that element (`Y[1, 2]`)
  document.addEventListener('click', (event) => {
    const target = event.target instanceof Element ? event.target : null;
    const code = target && target.closest('ul.tuples code');
    const cell = target && target.closest('table.cells td[data-index]');
    const section = (code || cell) && (code || cell).closest('section.export[data-name]');
    if (code && section) {
      vscode.postMessage({ type: 'why', target: section.dataset.name + code.textContent });
    } else if (cell && section) {
      vscode.postMessage({ type: 'why', target: `${section.dataset.name}[${cell.dataset.index}]` });
    }
  });
  vscode.postMessage({ type: 'ready' });
})();
