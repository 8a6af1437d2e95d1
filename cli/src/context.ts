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
