import type { CommandSpec } from '../core/context.ts';
import { COMMANDS_GROUP } from './commands.ts';
import { EXPORT } from './export.ts';
import { FOLLOW } from './follow.ts';
import { IMPORTS_GROUP } from './imports.ts';
import { LIMITS_GROUP } from './limits.ts';
import { LISTINGS } from './listings.ts';
import { MODES } from './modes.ts';
import { QUERY } from './query.ts';
import { WEBHOOKS_GROUP } from './webhooks.ts';

/** Every command, in the order `sortie --help` lists them. */
export const COMMANDS: CommandSpec[] = [...LISTINGS, QUERY, FOLLOW, MODES, EXPORT, ...IMPORTS_GROUP, ...COMMANDS_GROUP, ...WEBHOOKS_GROUP, ...LIMITS_GROUP];
