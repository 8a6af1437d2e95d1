/**
 * The limit-watch port: how ingest hands each committed batch to the limit rules the server watches,
 * without the telemetry wing importing limits/ (which sits above it). Declared here, below every
 * capability; the composition root (service.ts) connects it to limits/watch.ts.
 */

import type { DatasetRow } from '../db/schema.ts';

/** The dataset a batch was committed to, as the watcher needs it. */
export interface WatchedDataset {
  id: string;
  organizationId: string;
  experimentId: string;
  shape: DatasetRow['storage_shape'];
}

export function watchedDataset(dataset: DatasetRow): WatchedDataset {
  return { id: dataset.id, organizationId: dataset.organization_id, experimentId: dataset.experiment_id, shape: dataset.storage_shape };
}

/**
 * The samples one committed batch newly stored, read by signal. Only new ones: a redelivered frame or a
 * row the dataset already held is never visited, so a replay cannot be evaluated twice.
 */
export interface CommittedSamples {
  /**
   * Calls `visit` with each newly stored numeric sample of `signal` (addressed as Query addresses it:
   * "3" for a wide dataset's ch_3, `mavlink.ATTITUDE.roll` for a MAVLink one), in the order they were
   * taken, with its time in µs since the epoch on the clock the dataset's events are stored on (a wide
   * dataset's row time; a MAVLink frame's receive time, the agent's clock). Synchronous: valid only
   * until the caller's `committed` promise settles.
   */
  forEach(signal: string, visit: (timeUs: number, value: number) => void): void;
}

export interface LimitWatch {
  /**
   * Called after a batch of `dataset` committed (never before, so nothing is announced for data that
   * rolled back). Hands the batch's new samples to the dataset's limit rules: resolves once they are
   * read (the batch's arrays may be reused then), usually before they are evaluated and stored (see
   * `settled`); it waits longer only while the dataset's evaluations are behind. Never throws: the batch
   * is stored whatever happens here; a failure is logged.
   */
  committed(dataset: WatchedDataset, samples: CommittedSamples): Promise<void>;
  /** Resolves once every batch handed over so far (of `datasetId`, or of every dataset) is evaluated and what it changed stored. */
  settled(datasetId?: string): Promise<void>;
  /** Rules of `organizationId` changed through the API: this replica drops what it cached of them at once. */
  rulesChanged(organizationId: string): void;
}

/** Watches nothing (a context made without the limits capability). */
export const NO_LIMIT_WATCH: LimitWatch = {
  committed: async () => {},
  settled: async () => {},
  rulesChanged: () => {},
};
