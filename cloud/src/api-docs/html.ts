/** Escape text for HTML (text and attribute values). */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** Escape text, then turn `code` spans into <code> (after escaping, so nothing in them is markup). */
export function inline(text: string): string {
  return esc(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

/** A guide page: the same look as /docs, one column, nothing fetched, no scripts. */
export function guidePage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>${GUIDE_STYLE}</style>
</head>
<body>
<header><p class="crumbs"><a href="../docs">HTTP API</a> · <a href="grpc">gRPC and Connect</a> · <a href="webhooks">Webhook delivery</a> · <a href="mavlink">MAVLink signals</a></p>
<h1>${esc(title)}</h1></header>
<main>
${body}
</main>
</body>
</html>
`;
}

const GUIDE_STYLE = `
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1f24;background:#fff}
header{padding:1rem 2rem;border-bottom:1px solid #d0d7de;background:#f6f8fa}header h1{margin:.2rem 0}
.crumbs{margin:0;font-size:13px}
main{padding:1rem 2rem;max-width:70rem}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;border-radius:6px}
table{border-collapse:collapse;width:100%;margin:.4rem 0;font-size:14px}
th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}th{background:#f6f8fa}
td code{word-break:break-word}.note{color:#57606a;font-size:13px}
h2{margin-top:2rem;border-bottom:1px solid #d0d7de}h3{margin-bottom:.2rem}
form{margin:1rem 0}input[type=search]{font:inherit;padding:.3rem .5rem;width:24rem;max-width:100%}
`;
