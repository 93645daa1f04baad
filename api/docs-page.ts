/** A self-contained, human-readable rendering of the OpenAPI document (no CDN, works offline). */
const escape = (text: unknown) => String(text ?? '').replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

export function renderDocsPage(document: Record<string, any>): string {
  const byTag = new Map<string, string[]>();
  for (const [path, methods] of Object.entries<Record<string, any>>(document.paths)) {
    for (const [method, op] of Object.entries<any>(methods)) {
      const params = (op.parameters ?? []).map((p: any) => `<li><code>${escape(p.name)}</code> (${escape(p.in)}${p.required ? ', required' : ''}) ${escape(p.description ?? '')}</li>`).join('');
      const statuses = Object.entries<any>(op.responses).map(([status, r]) => `<li><b>${status}</b> ${escape(r.description)}</li>`).join('');
      const [bodyType, bodyContent] = Object.entries<any>(op.requestBody?.content ?? {})[0] ?? [];
      const body = bodyContent ? `<details><summary>Request body (${escape(bodyType)})</summary><pre>${escape(JSON.stringify(bodyContent.schema, null, 2))}</pre></details>` : '';
      const html = `<section><h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escape(path)}</code></h3>
        <p>${escape(op.summary)}</p><p class="d">${escape(op.description).replace(/\n/g, '<br>')}</p>
        ${params ? `<h4>Parameters</h4><ul>${params}</ul>` : ''}${body}<h4>Responses</h4><ul>${statuses}</ul></section>`;
      const tag = op.tags?.[0] ?? 'Other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), html]);
    }
  }
  const sections = [...byTag].map(([tag, ops]) => `<h2 id="${escape(tag)}">${escape(tag)}</h2>${ops.join('')}`).join('');
  const toc = [...byTag.keys()].map((tag) => `<a href="#${escape(tag)}">${escape(tag)}</a>`).join(' · ');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(document.info.title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#222}
section{border-top:1px solid #ddd;padding:.5rem 0}.m{font-family:monospace;padding:2px 6px;border-radius:4px;color:#fff;background:#555}
.get{background:#2b7a3d}.post{background:#1f5fa8}.put,.patch{background:#a86d1f}.delete{background:#a8321f}.d{color:#555}pre{background:#f6f6f6;padding:.5rem;overflow:auto}</style></head>
<body><h1>${escape(document.info.title)} <small>${escape(document.info.version)}</small></h1><p>${escape(document.info.description)}</p>
<p>Machine-readable: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a> (OpenAPI 3.1). ${toc}</p>
<p>Errors are <code>application/problem+json</code>: <code>{type, title, status, code, message, requestId, errors?}</code>.</p>${sections}</body></html>`;
}
