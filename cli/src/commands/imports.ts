import { stat } from 'node:fs/promises';
import type { ImportProgress } from '@sortie/client';
import { IMPORT_FORMATS, type CreateImportResponse, type FlightParameter, type ImportFormat, type LogImport } from '@sortie/contracts';
import type { CommandSpec, Context } from '../core/context.ts';
import { resolveDataset, resolveExperiment, stringValue } from '../core/context.ts';
import { CliError } from '../core/exit-codes.ts';
import { json, table, type Io } from '../core/output.ts';
import { formatBytes, formatDuration, importProgressLine, ProgressBar } from '../core/progress.ts';
import { timeMicros } from '../core/time.ts';

/** Without a terminal, a progress line at most this often (and one at each phase's start and end). */
const PLAIN_EVERY_MS = 5000;

/** Message types the result names; the rest are counted. */
const TYPES_SHOWN = 5;

/** Changes a parameter's row lists before "…". */
const CHANGES_SHOWN = 5;

/**
 * A parameter's value as a ground station shows it. Autopilots keep parameters as float32 (and int32),
 * which arrive as the float64 nearest: 0.15 is 0.15000000596046448. The shortest decimal that is the same
 * float32 is printed, so two values print alike only when they are equal.
 */
export function parameterText(value: number): string {
  if (Number.isInteger(value) || !Number.isFinite(value) || Math.fround(value) !== value) return String(value);
  for (let digits = 1; digits <= 9; digits++) {
    const text = String(Number(value.toPrecision(digits)));
    if (Math.fround(Number(text)) === value) return text;
  }
  return String(value);
}

/**
 * The upload's and then the import's progress on stderr: a bar redrawn over one line on a terminal,
 * otherwise plain lines (for a log file or CI): the first and last of each phase, and one every 5 s.
 */
class ImportProgressView {
  readonly #io: Io;
  readonly #tty: boolean;
  #phase: ImportProgress['phase'] | undefined;
  #latest: ImportProgress | undefined;
  #started = 0;
  /** When the latest progress came. */
  #lastAt = 0;
  #bar: ProgressBar | undefined;
  #plainAt = 0;
  /** Whether the latest state is on a plain line already (the phase's last line is not printed twice). */
  #latestShown = false;

  constructor(io: Io) {
    this.#io = io;
    this.#tty = io.stderr.isTTY === true;
  }

  update(progress: ImportProgress): void {
    const now = performance.now();
    if (progress.phase !== this.#phase) {
      this.#endPhase();
      this.#phase = progress.phase;
      // The server's import began when the upload's last line came (the file had arrived), not at its first line of progress.
      this.#started = progress.phase === 'import' && this.#lastAt > 0 ? this.#lastAt : now;
      this.#bar = this.#tty ? new ProgressBar((text) => this.#io.stderr.write(text)) : undefined;
      this.#plainAt = 0;
    }
    this.#lastAt = now;
    this.#latest = progress;
    this.#latestShown = false;
    this.#draw(false);
  }

  /** The import is done: its phase drawn complete, with the messages stored (a duplicate had no import phase). */
  done(result: CreateImportResponse): void {
    const final: ImportProgress = { phase: 'import', bytes: result.bytes, totalBytes: result.bytes, messages: result.report?.messages ?? 0 };
    const latest = this.#latest;
    const shownAlready = latest?.phase === 'import' && latest.bytes === final.bytes && latest.messages === final.messages;
    if (!result.duplicate && !shownAlready) this.update(final);
    this.#endPhase();
  }

  /** It failed: the last state stays as it was, and the line is ended so the error starts on its own. */
  failed(): void {
    this.#endPhase();
  }

  #draw(force: boolean): void {
    const progress = this.#latest;
    if (!progress) return;
    // The rate is over the phase so far, timed here (the bar's own clock starts when it is made).
    const line = () => importProgressLine({ ...progress, elapsedS: (performance.now() - this.#started) / 1000 });
    if (this.#bar) {
      this.#bar.show(line, force);
      return;
    }
    const now = performance.now();
    const due = force ? !this.#latestShown : this.#plainAt === 0 || now - this.#plainAt >= PLAIN_EVERY_MS;
    if (!due) return;
    this.#io.stderr.write(`${line()}\n`);
    this.#plainAt = now;
    this.#latestShown = true;
  }

  #endPhase(): void {
    if (this.#phase === undefined) return;
    this.#draw(true);
    this.#bar?.finish();
    this.#phase = undefined;
  }
}

/** Lines of `key  value`, with a key's several values on lines of their own under it. */
function fieldLines(fields: [key: string, value: string | number | null | readonly string[]][]): string {
  const width = Math.max(...fields.map(([key]) => key.length));
  const lines: string[] = [];
  for (const [key, value] of fields) {
    const values = Array.isArray(value) ? (value.length ? value : ['-']) : [value === null || value === '' ? '-' : String(value)];
    values.forEach((v, i) => lines.push(`${(i === 0 ? key : '').padEnd(width)}  ${v}`));
  }
  return lines.join('\n') + '\n';
}

/** A flight's span as `start → end (duration)`. */
function spanText(start: string | null, end: string | null): string {
  if (!start || !end) return '-';
  const seconds = (timeMicros(end) - timeMicros(start)) / 1e6;
  return `${start} → ${end} (${formatDuration(seconds)})`;
}

function typesText(types: readonly { type: string; count: number }[]): string {
  if (types.length === 0) return '-';
  const shown = types.slice(0, TYPES_SHOWN).map((t) => `${t.type} ${t.count}`);
  return types.length > TYPES_SHOWN ? `${shown.join(', ')}, … (${types.length} types)` : shown.join(', ');
}

/** An import as people read it: which dataset it made, what the log held, what to know about it. */
function importText(answer: LogImport & { duplicate?: boolean }, datasetName: string | undefined, experimentName: string | undefined): string {
  const report = answer.report;
  return fieldLines([
    ['dataset', answer.datasetId],
    ['name', datasetName ?? null],
    ['experiment', experimentName ?? answer.experimentId],
    ['format', answer.format],
    ['file', `${answer.fileName ?? '-'} (${formatBytes(answer.bytes)})`],
    ...(answer.duplicate ? [['duplicate', `yes: this file was imported on ${answer.createdAt}`] as [string, string]] : []),
    ['status', answer.status],
    ['messages', report?.messages ?? null],
    ['types', report ? typesText(report.types) : null],
    ['events', report?.events ?? null],
    ['parameters', report ? `${report.parameters} (${report.parameterChanges} changes)` : null],
    ['span', report ? spanText(report.start, report.end) : null],
    ['time', report ? { gps: "the log's GPS time", start: 'placed by --start', import: 'no GPS time: ends at the moment of import', recorded: "the tlog's receive times (no GPS time)" }[report.timeSource] : null],
    ...(report && report.skippedBytes > 0 ? [['skipped', `${formatBytes(report.skippedBytes)} not readable as messages`] as [string, string]] : []),
    ['warnings', report?.warnings ?? []],
  ]);
}

function formatFlag(ctx: Context): ImportFormat | undefined {
  const format = stringValue(ctx.values, 'format');
  if (format === undefined) return undefined;
  if (!(IMPORT_FORMATS as readonly string[]).includes(format)) throw new CliError(`--format is one of ${IMPORT_FORMATS.join(', ')}, not "${format}"`);
  return format as ImportFormat;
}

export const IMPORT: CommandSpec = {
  words: ['import'],
  usage: '<file>',
  summary:
    "import a vehicle's log (PX4 .ulg, ArduPilot .BIN, MAVLink .tlog or raw capture) into a new dataset of --experiment ID|NAME " +
    '(--name N, --format ulog|dataflash|tlog|mavlink, --start T to place a log without GPS time); progress on stderr',
  options: {
    experiment: { type: 'string' },
    name: { type: 'string' },
    format: { type: 'string' },
    start: { type: 'string' },
  },
  required: 1,
  async run(ctx) {
    const path = ctx.args[0]!;
    const experimentRef = stringValue(ctx.values, 'experiment');
    if (!experimentRef) throw new CliError('give --experiment ID or NAME: the experiment the new dataset joins (sortie experiments lists them)');
    const format = formatFlag(ctx);
    const start = stringValue(ctx.values, 'start');
    if (start !== undefined && Number.isNaN(Date.parse(start))) throw new CliError(`--start must be an RFC 3339 time such as 2026-01-02T03:04:05Z, not "${start}"`);
    const name = stringValue(ctx.values, 'name');
    const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
      throw new CliError(`cannot read ${path}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`);
    });
    if (!info.isFile()) throw new CliError(`${path} is not a file`);
    const experiment = await resolveExperiment(ctx, experimentRef);

    // Only this command reads a file from disk: the client's Node part is loaded for it alone.
    const { fileFromPath } = await import('@sortie/client/node');
    const file = await fileFromPath(path);
    const view = new ImportProgressView(ctx.io);
    let answer: CreateImportResponse;
    try {
      answer = await ctx.client.importFile(
        { experimentId: experiment.id, ...(name !== undefined && { name }), ...(format && { format }), ...(start !== undefined && { start }) },
        file,
        { onProgress: (progress) => view.update(progress) },
      );
    } catch (error) {
      view.failed();
      throw error;
    }
    view.done(answer);
    if (ctx.json) {
      ctx.out(json(answer));
      return;
    }
    const datasetName = (await ctx.client.experiments.list()).flatMap((e) => e.datasets).find((d) => d.id === answer.datasetId)?.name;
    ctx.out(importText(answer, datasetName, experiment.name));
    if (answer.duplicate) ctx.note(`the same file was imported before: nothing new was made (its dataset is ${answer.datasetId})\n`);
  },
};

export const IMPORTS: CommandSpec = {
  words: ['imports'],
  usage: '',
  summary: 'list log imports (of every experiment, or of --experiment ID|NAME, or of --dataset ID|NAME) with their dataset, file and messages',
  options: { experiment: { type: 'string' }, dataset: { type: 'string' } },
  required: 0,
  async run(ctx) {
    const experimentRef = stringValue(ctx.values, 'experiment');
    const datasetRef = stringValue(ctx.values, 'dataset');
    const experiments = await ctx.client.experiments.list();
    let imports: LogImport[];
    if (datasetRef !== undefined) {
      const { dataset } = await resolveDataset(ctx, datasetRef);
      imports = await ctx.client.imports.list({ datasetId: dataset.id });
    } else {
      const chosen = experimentRef === undefined ? experiments : [await resolveExperiment(ctx, experimentRef)];
      imports = (await Promise.all(chosen.map((e) => ctx.client.imports.list({ experimentId: e.id })))).flat();
      imports.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
    }
    if (ctx.json) {
      ctx.out(json(imports));
      return;
    }
    const names = new Map(experiments.flatMap((e) => e.datasets.map((d) => [d.id, d.name] as const)));
    ctx.out(
      table(
        ['DATASET', 'NAME', 'FORMAT', 'FILE', 'SIZE', 'MESSAGES', 'FLIGHT START', 'IMPORTED'],
        imports.map((i) => [
          i.datasetId,
          names.get(i.datasetId),
          i.format,
          i.fileName,
          formatBytes(i.bytes),
          i.status === 'done' ? (i.report?.messages ?? null) : 'importing',
          i.report?.start,
          i.createdAt,
        ]),
      ),
    );
  },
};

/** A parameter's changes as a cell: how many, then the values in order (the first few). */
function changesText(parameter: FlightParameter): string {
  const { changes } = parameter;
  if (changes.length === 0) return '-';
  const values = changes.slice(0, CHANGES_SHOWN).map((c) => parameterText(c.value));
  return `${changes.length}: ${values.join(', ')}${changes.length > CHANGES_SHOWN ? ', …' : ''}`;
}

export const PARAMS: CommandSpec = {
  words: ['params'],
  usage: '<flight>',
  summary: "a flight's parameters (dataset id or name): the value each started with, its changes during the flight, its final value (--changed: only those that changed)",
  options: { changed: { type: 'boolean' } },
  required: 1,
  async run(ctx) {
    const { experiment, dataset } = await resolveDataset(ctx, ctx.args[0]!);
    const answer = await ctx.client.datasets.parameters({ datasetId: dataset.id, experimentId: experiment.id });
    const parameters = ctx.values.changed === true ? answer.parameters.filter((p) => p.changes.length > 0) : answer.parameters;
    if (ctx.json) {
      ctx.out(json({ ...answer, parameters }));
      return;
    }
    ctx.out(table(['NAME', 'INITIAL', 'CHANGES', 'FINAL'], parameters.map((p) => [p.name, parameterText(p.initial), changesText(p), parameterText(p.final)])));
    const changed = answer.parameters.filter((p) => p.changes.length > 0).length;
    const source = answer.source === 'log' ? 'from the log' : "from the flight's PARAM_VALUE messages";
    ctx.note(`${answer.parameters.length} parameters of ${dataset.name} ${source}, ${changed} changed during the flight\n`);
  },
};

export const PARAMS_DIFF: CommandSpec = {
  words: ['params', 'diff'],
  usage: '<a> <b>',
  summary: "compare two flights' parameters (dataset ids or names) as they started, or as they ended with --at final: added, removed and changed ones",
  options: { at: { type: 'string' } },
  required: 2,
  async run(ctx) {
    const at = stringValue(ctx.values, 'at') ?? 'initial';
    if (at !== 'initial' && at !== 'final') throw new CliError(`--at is initial or final, not "${at}"`);
    const [a, b] = await Promise.all([resolveDataset(ctx, ctx.args[0]!), resolveDataset(ctx, ctx.args[1]!)]);
    const diff = await ctx.client.datasets.parameterDiff({ a: a.dataset.id, b: b.dataset.id, at });
    if (ctx.json) {
      ctx.out(json(diff));
      return;
    }
    const rows = [
      ...diff.added.map((p) => ['added', p.name, null, parameterText(p.value)]),
      ...diff.removed.map((p) => ['removed', p.name, parameterText(p.value), null]),
      ...diff.changed.map((p) => ['changed', p.name, parameterText(p.a), parameterText(p.b)]),
    ];
    if (rows.length > 0) ctx.out(table(['CHANGE', 'NAME', 'A', 'B'], rows));
    const when = at === 'initial' ? 'as the flights started' : 'as the flights ended';
    ctx.out(
      `${diff.added.length} added, ${diff.removed.length} removed, ${diff.changed.length} changed, ${diff.unchanged} the same, ${when} ` +
        `(A ${a.dataset.name}, B ${b.dataset.name})\n`,
    );
  },
};

export const IMPORTS_GROUP: CommandSpec[] = [IMPORT, IMPORTS, PARAMS, PARAMS_DIFF];
