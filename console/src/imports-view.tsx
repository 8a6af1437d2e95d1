// Importing a vehicle's own log files into an experiment: dropped on the experiment in the list, or chosen
// with its "Import log…" button (the keyboard's way in). Each file gets a row with a progress bar: the
// upload's bytes, then the service reading the log (bytes read, messages stored), then what the import
// brought or why it failed. Files go one at a time, in the order given: the service reads each log whole,
// and a second upload at once would only slow the first.
import type { CreateImportResponse } from '@sortie/contracts';
import type { VNode } from 'preact';
import { useCallback, useRef, useState } from 'preact/hooks';
import { SortieApiError, type ConsoleApi, type ImportUpload } from './api.ts';
import { formatBytes, importOutcome, progressState, progressValue, statusText, type ImportState } from './import-logic.ts';
import type { Need } from './scopes.tsx';

export interface ImportRow {
  id: number;
  experimentId: string;
  file: File;
  status: ImportState;
}

function message(e: unknown): string {
  if (e instanceof SortieApiError) return `${e.message}${e.requestId ? ` (request ${e.requestId})` : ''}`;
  return e instanceof Error ? e.message : String(e);
}

let nextId = 1;

/**
 * The imports of this page: every file given, queued and uploaded one at a time. `onImported` hears each
 * import that ended with a flight (new or already there), so the list can show it.
 */
export function useImports(api: ConsoleApi, onImported: (answer: CreateImportResponse) => void) {
  const [rows, setRows] = useState<ImportRow[]>([]);
  const queue = useRef<ImportRow[]>([]);
  const running = useRef<{ id: number; upload: ImportUpload } | undefined>(undefined);
  const notify = useRef(onImported);
  notify.current = onImported;

  const set = (id: number, status: ImportState) => setRows((held) => held.map((r) => (r.id === id ? { ...r, status } : r)));

  const next = () => {
    if (running.current) return;
    const row = queue.current.shift();
    if (!row) return;
    const upload = api.importLog(row.experimentId, row.file, (p) => set(row.id, progressState(p, row.file.size)));
    running.current = { id: row.id, upload };
    set(row.id, { state: 'uploading', bytes: 0, totalBytes: row.file.size });
    upload.done
      .then(
        (answer) => {
          set(row.id, { state: 'done', answer });
          notify.current(answer);
        },
        (e: unknown) => set(row.id, e instanceof DOMException && e.name === 'AbortError' ? { state: 'cancelled' } : { state: 'failed', message: message(e) }),
      )
      .finally(() => {
        running.current = undefined;
        next();
      });
  };

  const add = useCallback(
    (experimentId: string, files: Iterable<File>) => {
      const added = [...files].map((file) => ({ id: nextId++, experimentId, file, status: { state: 'waiting' } as ImportState }));
      if (added.length === 0) return;
      setRows((held) => [...held, ...added]);
      queue.current.push(...added);
      next();
    },
    [api],
  );

  const cancel = useCallback((id: number) => {
    if (running.current?.id === id) {
      running.current.upload.abort();
      return;
    }
    queue.current = queue.current.filter((r) => r.id !== id);
    set(id, { state: 'cancelled' });
  }, []);

  const dismiss = useCallback((id: number) => setRows((held) => held.filter((r) => r.id !== id)), []);

  return { rows, add, cancel, dismiss };
}

/**
 * "Import log…": a real file input (so it is reached by Tab and opened with Enter or Space), labelled by
 * the experiment it imports into.
 */
export function ImportButton(props: { experimentId: string; experimentName: string; need: Need; onFiles: (files: File[]) => void }): VNode<any> {
  const id = `import-${props.experimentId}`;
  return (
    <div class="import-button">
      <label for={id} class={props.need.disabled ? 'disabled' : undefined}>
        Import log…
      </label>
      <input
        id={id}
        type="file"
        multiple
        class="sr-only"
        accept=".ulg,.bin,.tlog"
        disabled={props.need.disabled}
        aria-label={`Import log files into ${props.experimentName}`}
        onChange={(e: Event) => {
          const input = e.target as HTMLInputElement;
          props.onFiles([...(input.files ?? [])]);
          // The same file chosen again is a new choice (the service answers it as already imported).
          input.value = '';
        }}
      />
      {props.need.note}
    </div>
  );
}

/** The rows of one experiment's imports, newest last. */
export function ImportRows(props: {
  rows: ImportRow[];
  flightHref: (answer: CreateImportResponse) => string;
  open: (answer: CreateImportResponse) => void;
  nameOf: (datasetId: string) => string | undefined;
  cancel: (id: number) => void;
  dismiss: (id: number) => void;
}): VNode<any> | null {
  if (props.rows.length === 0) return null;
  return (
    <ul class="imports" aria-label="Log imports">
      {props.rows.map((row) => {
        const s = row.status;
        const value = progressValue(s);
        const ended = s.state === 'done' || s.state === 'failed' || s.state === 'cancelled';
        const answer = s.state === 'done' ? s.answer : undefined;
        const outcome = answer ? importOutcome(answer) : undefined;
        const flight = answer && (props.nameOf(answer.datasetId) ?? 'the flight');
        const link = answer ? (
          <a href={props.flightHref(answer)} onClick={(e: Event) => (e.preventDefault(), props.open(answer))}>
            {answer.duplicate ? `open ${flight}` : `Open ${flight}`}
          </a>
        ) : null;
        return (
          <li key={row.id} class={`import-row import-${s.state}`} data-state={s.state} data-file={row.file.name}>
            <div class="import-file">
              <span class="import-name" title={row.file.name}>
                {row.file.name}
              </span>
              <span class="muted">{` ${formatBytes(row.file.size)}`}</span>
            </div>
            <progress max={1} {...(value !== undefined && { value })} aria-label={`Import of ${row.file.name}`} data-phase={s.state} />
            <div
              class={s.state === 'failed' ? 'error' : 'import-status'}
              role={ended ? (s.state === 'failed' ? 'alert' : 'status') : undefined}
              data-testid="import-status"
            >
              {statusText(s)}
              {answer?.duplicate ? [': ', link] : null}
            </div>
            {outcome && !answer!.duplicate ? (
              <div class="import-outcome">
                <div class="muted">{outcome.facts.join(' · ')}</div>
                {outcome.warnings.length > 0 ? (
                  <details class="import-warnings">
                    <summary>{`${outcome.warnings.length} warning${outcome.warnings.length === 1 ? '' : 's'}`}</summary>
                    <ul>
                      {outcome.warnings.map((w, i) => (
                        <li key={i}>{w}</li>
                      ))}
                    </ul>
                  </details>
                ) : null}
                {link}
              </div>
            ) : null}
            <button
              type="button"
              class="import-action"
              onClick={() => (ended ? props.dismiss(row.id) : props.cancel(row.id))}
              aria-label={`${ended ? 'Dismiss' : 'Cancel'} the import of ${row.file.name}`}
            >
              {ended ? 'Dismiss' : 'Cancel'}
            </button>
          </li>
        );
      })}
    </ul>
  );
}
