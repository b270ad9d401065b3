// The Fuse Results page's only script (src/panelHtml.ts loads it with the page's
// nonce). It swaps in each new <main> the extension sends (src/panel.ts), so that
// an update keeps the frame and the scroll position, and asks for the current one
// whenever the page is (re)loaded, e.g. when a hidden panel is shown again.
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
  vscode.postMessage({ type: 'ready' });
})();
