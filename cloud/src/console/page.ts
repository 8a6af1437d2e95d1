import type { ConsoleBundle } from './bundle.ts';

/** The console's only HTML: a mount point, the hashed stylesheet and module script, nothing inline (the CSP allows none). */
export function renderConsolePage(bundle: ConsoleBundle): string {
  const css = bundle.stylesheet ? `<link rel="stylesheet" href="/console/assets/${bundle.stylesheet}">` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sortie console</title>
<link rel="icon" href="data:,">
${css}
<script type="module" src="/console/assets/${bundle.script}"></script>
</head>
<body>
<div id="app"><main><p>Loading the Sortie console…</p><noscript>The console needs JavaScript.</noscript></main></div>
</body>
</html>
`;
}
