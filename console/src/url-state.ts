// The page's address holds what a shared link must reproduce: the view, the dataset, the plotted channels
// and the visible window. Never the key: it lives in sessionStorage and travels only as x-api-key.

export type ConsoleView = 'data' | 'webhooks';

export interface ConsoleLocation {
  view: ConsoleView;
  experimentId?: string;
  datasetId?: string;
  channels: string[];
  /** What the flight's page shows: its telemetry (plots, track, band, commands; the default) or its parameters. */
  panel?: 'parameters';
  /** Visible window in Unix seconds; absent: the dataset's whole span. */
  from?: number;
  to?: number;
}

function isoSeconds(text: string | null): number | undefined {
  if (!text) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms / 1000 : undefined;
}

export function parseLocation(search: string): ConsoleLocation {
  const params = new URLSearchParams(search);
  const view: ConsoleView = params.get('view') === 'webhooks' ? 'webhooks' : 'data';
  const from = isoSeconds(params.get('from'));
  const to = isoSeconds(params.get('to'));
  const window = from !== undefined && to !== undefined && from < to ? { from, to } : {};
  return {
    view,
    experimentId: params.get('experiment') ?? undefined,
    datasetId: params.get('dataset') ?? undefined,
    channels: params.getAll('channel').filter((c) => c.length > 0),
    ...(params.get('panel') === 'parameters' && { panel: 'parameters' as const }),
    ...window,
  };
}

export function formatLocation(location: ConsoleLocation): string {
  const params = new URLSearchParams();
  if (location.view !== 'data') params.set('view', location.view);
  if (location.experimentId) params.set('experiment', location.experimentId);
  if (location.datasetId) params.set('dataset', location.datasetId);
  for (const channel of location.channels) params.append('channel', channel);
  if (location.panel) params.set('panel', location.panel);
  if (location.from !== undefined && location.to !== undefined) {
    // Whole milliseconds, rounded as the Query and export requests round them, so a shared link asks for the same window.
    params.set('from', new Date(Math.round(location.from * 1000)).toISOString());
    params.set('to', new Date(Math.round(location.to * 1000)).toISOString());
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}
