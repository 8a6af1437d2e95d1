import type { ParseArgsOptionsConfig } from 'node:util';
import { createSortieClient, SortieApiError, type SortieClient } from '@sortie/client';
import type { Dataset, Experiment } from '@sortie/contracts';
import { CliError, EXIT } from './exit-codes.ts';
import type { Io } from './output.ts';

export type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** What a command runs with: the client, its arguments, and where it writes. */
export interface Context {
  client: SortieClient;
  args: string[];
  values: Values;
  io: Io;
  /** `--json`: one JSON document on stdout instead of a table. */
  json: boolean;
  baseUrl: string;
  apiKey: string;
  out(text: string): void;
  /** Progress and notes for a person: stderr, so stdout stays the result. */
  note(text: string): void;
}

export interface CommandSpec {
  /** Words that select it, e.g. ['commands', 'watch']. */
  words: string[];
  /** Positional arguments after the words, e.g. '<commandId>'. */
  usage: string;
  summary: string;
  options?: ParseArgsOptionsConfig;
  /** How many positionals it needs at least (the rest are optional). */
  required: number;
  /** More positionals than the usage names are refused unless this is set. */
  maxPositionals?: number;
  run(ctx: Context): Promise<number | void>;
}

export function makeClient(baseUrl: string, apiKey: string): SortieClient {
  return createSortieClient({ baseUrl, apiKey });
}

export function stringValue(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

export function listValue(values: Values, name: string): string[] {
  const value = values[name];
  return Array.isArray(value) ? value.map(String) : typeof value === 'string' ? [value] : [];
}

/** A flag holding a whole number within bounds; a bad one is a usage error naming the flag. */
export function integerValue(values: Values, name: string, bounds: { min: number; max: number }): number | undefined {
  const raw = stringValue(values, name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^-?\d+$/.test(raw.trim()) || n < bounds.min || n > bounds.max) {
    throw new CliError(`--${name} must be a whole number from ${bounds.min} to ${bounds.max}, not "${raw}"`);
  }
  return n;
}

/** A dataset and its experiment, found from the dataset id alone (many routes need both). */
export async function locateDataset(ctx: Context, datasetId: string): Promise<{ experiment: Experiment; dataset: Dataset }> {
  const experiments = await ctx.client.experiments.list();
  for (const experiment of experiments) {
    const dataset = experiment.datasets.find((d) => d.id === datasetId);
    if (dataset) return { experiment, dataset };
  }
  throw new SortieApiError({ status: 404, code: 'not_found', message: `no dataset ${datasetId} in this key's organization` });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * An experiment named on the command line by its id or its name. A name two experiments share is a
 * usage error listing their ids; one no experiment has is a failure (exit 1), as the service's 404 is.
 */
export async function resolveExperiment(ctx: Context, ref: string): Promise<Experiment> {
  const experiments = await ctx.client.experiments.list();
  const byId = UUID.test(ref) ? experiments.find((e) => e.id === ref.toLowerCase()) : undefined;
  if (byId) return byId;
  const named = experiments.filter((e) => e.name === ref);
  if (named.length === 1) return named[0]!;
  if (named.length > 1) throw new CliError(`${named.length} experiments are named "${ref}": give one's id (${named.map((e) => e.id).join(', ')})`);
  throw new CliError(`no experiment "${ref}" in this key's organization (sortie experiments lists them)`, EXIT.failed);
}

/**
 * A dataset named on the command line by its id or its name (a flight's name, e.g. an imported log's),
 * with its experiment. A name several datasets share is a usage error listing them, to be told apart by id.
 */
export async function resolveDataset(ctx: Context, ref: string): Promise<{ experiment: Experiment; dataset: Dataset }> {
  const experiments = await ctx.client.experiments.list();
  const all = experiments.flatMap((experiment) => experiment.datasets.map((dataset) => ({ experiment, dataset })));
  const byId = UUID.test(ref) ? all.find(({ dataset }) => dataset.id === ref.toLowerCase()) : undefined;
  if (byId) return byId;
  const named = all.filter(({ dataset }) => dataset.name === ref);
  if (named.length === 1) return named[0]!;
  if (named.length > 1) {
    const which = named.map(({ experiment, dataset }) => `${dataset.id} (experiment ${experiment.name})`).join(', ');
    throw new CliError(`${named.length} datasets are named "${ref}": give one's id: ${which}`);
  }
  throw new CliError(`no dataset "${ref}" in this key's organization (sortie datasets lists them)`, EXIT.failed);
}

/**
 * How Query addresses a channel: a wide dataset's by the N of its `ch_N` column, a narrow (MAVLink)
 * dataset's by its signal name — both are what the channel list calls `hypertableColName`.
 */
export function queryAddress(channel: { hypertableColName: string }): string {
  return /^ch_\d+$/.test(channel.hypertableColName) ? channel.hypertableColName.slice(3) : channel.hypertableColName;
}

/** Channel data types Query cannot read (it reads numbers, bools as 0/1): left out of "every channel". */
export const NOT_PLOTTABLE: ReadonlySet<string> = new Set(['string', 'bytes', 'bit_field']);

/** The channel `--channel NAME` means: by its name or by its address (`ch_N`, a MAVLink signal name). */
export function findChannel<C extends { name: string; hypertableColName: string }>(channels: readonly C[], name: string): C | undefined {
  return channels.find((c) => c.name === name || c.hypertableColName === name);
}
