import { MAVLINK_DIALECTS, MAVLINK_FIELD_DATA_TYPE, MAVLINK_REGISTRY, signalName } from '@sortie/contracts/mavlink';
import { esc, guidePage } from './html.ts';

/** One row of the catalogue: a field of a message, and the signal name(s) its values are stored under. */
export interface CatalogueEntry {
  message: string;
  msgid: number;
  field: string;
  /** `mavlink.<MESSAGE>.<field>`; a numeric array has one signal per element, `…<field>[0]` to `…<field>[elements − 1]`. */
  signal: string;
  elements: number | undefined;
  /** The channel dataType narrow datasets list for it. */
  dataType: string;
  /** From the dialect XML; '' when it names none. */
  unit: string;
  /** A MAVLink 2 extension field (absent from MAVLink 1 frames). */
  extension: boolean;
}

let cached: CatalogueEntry[] | undefined;

/**
 * Every signal a MAVLink dataset can hold, from the pinned dialect the server decodes with (the
 * contracts' merged registry): a char array is one text signal, a numeric array one signal per element.
 * A message id outside the dialect is kept as `mavlink.UNKNOWN_<id>.raw` (bytes).
 */
export function mavlinkCatalogue(): readonly CatalogueEntry[] {
  cached ??= [...MAVLINK_REGISTRY.values()]
    .flatMap((clazz) =>
      clazz.FIELDS.map((field): CatalogueEntry => {
        const isArray = field.type.endsWith('[]');
        const base = isArray ? field.type.slice(0, -2) : field.type;
        const text = base === 'char';
        return {
          message: clazz.MSG_NAME,
          msgid: clazz.MSG_ID,
          field: field.source,
          signal: signalName(clazz.MSG_NAME, field.source),
          elements: isArray && !text ? field.length : undefined,
          dataType: MAVLINK_FIELD_DATA_TYPE[base] ?? base,
          unit: field.units ?? '',
          extension: field.extension,
        };
      }),
    )
    .sort((a, b) => (a.message < b.message ? -1 : a.message > b.message ? 1 : 0));
  return cached;
}

/** Entries whose signal name, message, field or unit contains `q` (case-insensitive); all for an empty query. */
export function searchCatalogue(q: string): CatalogueEntry[] {
  const needle = q.trim().toLowerCase();
  if (!needle) return [...mavlinkCatalogue()];
  return mavlinkCatalogue().filter((e) => `${e.signal} ${e.msgid} ${e.unit}`.toLowerCase().includes(needle));
}

/** /docs/mavlink: the catalogue, searched on the server (`?q=`), so the page needs no script. */
export function renderMavlinkPage(q: string): string {
  const all = mavlinkCatalogue();
  const found = searchCatalogue(q);
  const messages = new Set(all.map((e) => e.message)).size;
  const rows = found
    .map((e) => {
      const name = e.elements === undefined ? `<code>${esc(e.signal)}</code>` : `<code>${esc(e.signal)}[0]</code> … <code>[${e.elements - 1}]</code>`;
      return `<tr><td>${name}</td><td>${esc(e.message)} (${e.msgid})</td><td>${esc(e.dataType)}</td><td>${esc(e.unit)}</td><td>${e.extension ? 'extension' : ''}</td></tr>`;
    })
    .join('');
  const body = `
<p>A MAVLink (narrow) dataset stores every decoded field as a signal named <code>mavlink.&lt;MESSAGE&gt;.&lt;field&gt;</code> (an element of a
numeric array as <code>…&lt;field&gt;[i]</code>; a message id the dialect lacks as <code>mavlink.UNKNOWN_&lt;id&gt;.raw</code>, bytes). Query,
export and <code>GET /api/datasets/channels</code> use these names. The dialect is pinned: node-mavlink's ${MAVLINK_DIALECTS.join(', ')}
registries merged, ${messages} messages, ${all.length} fields.</p>
<form method="get" action="mavlink"><label>Search signals, messages, ids or units:
<input type="search" name="q" value="${esc(q)}" placeholder="e.g. ATTITUDE, alt, degE7" maxlength="100"></label> <button type="submit">Search</button></form>
<p>${found.length === all.length ? `All ${all.length} fields.` : `${found.length} of ${all.length} fields match <code>${esc(q)}</code>.`}</p>
<table><thead><tr><th>signal</th><th>message (id)</th><th>dataType</th><th>unit</th><th></th></tr></thead><tbody>${rows}</tbody></table>
`;
  return guidePage('MAVLink signals', body);
}
