import { readFileSync } from 'node:fs';

/**
 * The SPARQL query page: YASGUI (Zazuko's maintained build, served from node_modules, no CDN).
 * It holds no data: the user pastes a project id and an API key, which stay in the page's memory
 * and go out only as the Authorization header of the queries it sends.
 */
export function renderSparqlPage(): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Weft SPARQL</title>
<link rel="stylesheet" href="/sparql/yasgui.min.css">
<style>body{font-family:system-ui,sans-serif;margin:1rem}form{display:flex;gap:.5rem;align-items:end;margin-bottom:1rem;flex-wrap:wrap}
label{display:flex;flex-direction:column;font-size:.85rem}input{font-family:monospace;padding:.3rem;min-width:22rem}</style></head>
<body><h1>Weft SPARQL</h1>
<form id="connection" autocomplete="off">
<label>Project id <input id="project" required pattern="[0-9a-f-]{36}" placeholder="00000000-0000-0000-0000-000000000000"></label>
<label>API key (sent only as the Authorization header) <input id="key" type="password" required placeholder="weft_sk_…"></label>
<button type="submit">Use</button> <span id="status" role="status"></span></form>
<div id="yasgui"></div>
<script src="/sparql/yasgui.min.js"></script>
<script src="/sparql/page.js"></script></body></html>`;
}

/** The page's script: kept out of the HTML so the Content-Security-Policy can forbid inline scripts. */
export const SPARQL_PAGE_SCRIPT = `(function () {
  var key = '';
  var project = '';
  var yasgui = new Yasgui(document.getElementById('yasgui'), {
    requestConfig: {
      endpoint: function () { return '/api/v1/projects/' + project + '/ontology/sparql'; },
      method: 'POST',
      headers: function () { return { Authorization: 'Bearer ' + key }; },
    },
    copyEndpointOnNewTab: false,
  });
  document.getElementById('connection').addEventListener('submit', function (event) {
    event.preventDefault();
    key = document.getElementById('key').value.trim();
    project = document.getElementById('project').value.trim();
    document.getElementById('status').textContent = 'Queries go to project ' + project + '.';
  });
  window.weftYasgui = yasgui;
})();`;

const assets = new Map<string, string>();

/** YASGUI's built files, read once from the installed package. */
export function yasguiAsset(name: 'yasgui.min.js' | 'yasgui.min.css'): string {
  let text = assets.get(name);
  if (text === undefined) {
    text = readFileSync(require.resolve(`@zazuko/yasgui/build/${name}`), 'utf8');
    assets.set(name, text);
  }
  return text;
}
