import type { CommandSpec } from '../core/context.ts';
import { stringValue } from '../core/context.ts';
import { json, table } from '../core/output.ts';
import { record } from './commands.ts';

/** Experiments, datasets, channels, events: what a key's organization holds, and a new experiment. */
export const LISTINGS: CommandSpec[] = [
  {
    words: ['experiments'],
    usage: '',
    summary: 'list experiments, newest first, with their dataset counts',
    required: 0,
    async run(ctx) {
      const experiments = await ctx.client.experiments.list();
      ctx.out(
        ctx.json
          ? json(experiments)
          : table(['ID', 'NAME', 'DATASETS', 'CREATED'], experiments.map((e) => [e.id, e.name, e.datasets.length, e.createdAt])),
      );
    },
  },
  {
    // What the edge agent needs before its first flight (--experiment ID): the agent registers its
    // datasets itself, so an experiment is all a newcomer has to make.
    words: ['experiments', 'create'],
    usage: '<name>',
    summary: 'create an experiment (--description TEXT) and print its id, which the edge agent takes as --experiment',
    options: { description: { type: 'string' } },
    required: 1,
    async run(ctx) {
      const description = stringValue(ctx.values, 'description');
      const experiment = await ctx.client.experiments.create({ name: ctx.args[0]!, ...(description !== undefined && { description }) });
      ctx.out(
        ctx.json
          ? json(experiment)
          : record({ id: experiment.id, name: experiment.name, description: experiment.description, createdAt: experiment.createdAt }),
      );
      if (!ctx.json) ctx.note(`stream a flight into it: npm run agent -- --experiment ${experiment.id} --source … --spool-dir …\n`);
    },
  },
  {
    words: ['datasets'],
    usage: '',
    summary: 'list datasets (of every experiment, or of --experiment ID)',
    options: { experiment: { type: 'string' } },
    required: 0,
    async run(ctx) {
      const only = stringValue(ctx.values, 'experiment');
      const experiments = await ctx.client.experiments.list();
      const datasets = experiments.filter((e) => only === undefined || e.id === only).flatMap((e) => e.datasets.map((d) => ({ ...d, experimentName: e.name })));
      ctx.out(
        ctx.json
          ? json(datasets)
          : table(
              ['ID', 'NAME', 'SHAPE', 'EXPERIMENT', 'CREATED'],
              datasets.map((d) => [d.id, d.name, d.storageShape === 'narrow' ? `narrow (${d.format})` : 'wide', d.experimentName, d.createdAt]),
            ),
      );
    },
  },
  {
    words: ['channels'],
    usage: '<datasetId>',
    summary: "list a dataset's channels (a MAVLink dataset's signals)",
    required: 1,
    async run(ctx) {
      const channels = await ctx.client.channels.list({ datasetId: ctx.args[0]! });
      ctx.out(
        ctx.json
          ? json(channels)
          : table(['NAME', 'UNIT', 'TYPE', 'ADDRESS'], channels.map((c) => [c.name, c.unit, c.dataType, c.hypertableColName])),
      );
    },
  },
  {
    words: ['events'],
    usage: '<datasetId>',
    summary: "list a dataset's events in time order (--kind KIND to filter)",
    options: { kind: { type: 'string' } },
    required: 1,
    async run(ctx) {
      const kind = stringValue(ctx.values, 'kind');
      const events = await ctx.client.events.list({ datasetId: ctx.args[0]!, ...(kind !== undefined && { kind }) });
      ctx.out(
        ctx.json
          ? json(events)
          : table(['TIME', 'KIND', 'MESSAGE'], events.map((e) => [e.timestamp, e.kind, e.message])),
      );
    },
  },
];
