/**
 * What a person starting the server on a terminal needs first: where the console, the docs and the
 * gRPC port are. Printed only when stdout is a TTY; piped or collected output stays JSON log lines.
 */
export interface BannerFacts {
  /** Host and port the HTTP server bound (a wildcard is shown as localhost: a browser cannot open 0.0.0.0). */
  httpHost: string;
  httpPort: number;
  grpcHost: string;
  grpcPort: number;
  /** SORTIE_PUBLIC_URL when set differently from the local address (a proxy in front). */
  publicUrl: string;
  database: 'postgres' | 'pglite';
  dataDir: string;
}

export function browserHost(host: string): string {
  return host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
}

export function startupBanner(facts: BannerFacts): string {
  const local = `http://${browserHost(facts.httpHost)}:${facts.httpPort}`;
  const grpc = `${facts.grpcHost.includes(':') ? `[${facts.grpcHost}]` : facts.grpcHost}:${facts.grpcPort}`;
  const lines = [
    '',
    '  Sortie is running',
    '',
    `  Console    ${local}/`,
    `  API docs   ${local}/docs`,
    `  gRPC       ${grpc}  (TelemetryService; Query and Submit also at ${local}/api/rpc)`,
    ...(facts.publicUrl !== local ? [`  Public URL ${facts.publicUrl}`] : []),
    `  Database   ${facts.database === 'pglite' ? `embedded (PGlite) in ${facts.dataDir}` : 'PostgreSQL (SORTIE_DATABASE_URL)'}`,
    '',
    '  Ctrl-C stops it. Logs follow as JSON lines.',
    '',
  ];
  return lines.join('\n') + '\n';
}
