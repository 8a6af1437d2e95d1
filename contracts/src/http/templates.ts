import { z } from 'zod';
import { TimestampOut, text, jsonObject } from './common.ts';

/**
 * Command templates: an addition to the spec. A command's `templateKey` names one; its `argsSchema`,
 * when present, validates the command's `args` at create (failures are 400 with fields like
 * `args.altitude`).
 *
 * `argsSchema` is a JSON Schema (2020-12 keywords) restricted to a subset the server enforces exactly:
 * - the root has `"type": "object"`;
 * - type, enum, const (enum/const values are strings, numbers, booleans or null);
 * - object: properties, required (each name listed in properties), additionalProperties (boolean or
 *   schema), minProperties, maxProperties;
 * - array: items (one schema), minItems, maxItems, uniqueItems;
 * - string: minLength, maxLength, format (date-time, date, time, duration, email, uri, uuid, ipv4,
 *   ipv6, hostname);
 * - number/integer: minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers), multipleOf;
 * - anyOf, oneOf, allOf;
 * - annotations: $schema (2020-12 or draft-07), title, description, $comment, examples, default,
 *   deprecated (never applied: a `default` does not fill in a missing argument).
 * A type-specific keyword needs a `type` it applies to (e.g. `minimum` needs number or integer), so no
 * keyword is silently inert. Not supported, and refused with 400: $ref/$defs, not, if/then/else,
 * pattern/patternProperties (a template's regular expression would run inside the shared server and could
 * stall it with catastrophic backtracking), tuples, contains, dependent* and unevaluated*. Depth is
 * limited to 16 nested schemas.
 */

export const COMMAND_TEMPLATE_KEY_MAX = 64;

export const CommandTemplateKey = text()
  .min(1, `must be 1 to ${COMMAND_TEMPLATE_KEY_MAX} characters`)
  .max(COMMAND_TEMPLATE_KEY_MAX, `must be 1 to ${COMMAND_TEMPLATE_KEY_MAX} characters`)
  // `*`, not `+`: an empty key is already reported once, by min(1).
  .regex(/^[A-Za-z0-9_.:-]*$/, 'may contain only letters, digits, "_", ".", ":" and "-"');

/** A JSON object; whether it is an acceptable schema is decided by the server (see above). */
export const ArgsJsonSchema = jsonObject({ error: 'must be a JSON Schema object' });

const TemplateDescription = text().max(4000);
const TemplateCategory = text().max(120);

export const CommandTemplateSchema = z.object({
  key: CommandTemplateKey,
  description: text(),
  category: text(),
  /** Informational for clients (e.g. ask for confirmation before dispatch). */
  destructive: z.boolean(),
  /** Null when `args` is free-form. */
  argsSchema: ArgsJsonSchema.nullable(),
  createdAt: TimestampOut,
  updatedAt: TimestampOut,
});
export type CommandTemplate = z.infer<typeof CommandTemplateSchema>;

/** GET /api/commands/templates/list (commands:read): the organization's templates ordered by key. */
export const ListCommandTemplatesResponseSchema = z.array(CommandTemplateSchema);

/** POST /api/commands/templates/create (commands:write). The key is unique per organization (409). */
export const CreateCommandTemplateRequestSchema = z.object({
  key: CommandTemplateKey,
  description: TemplateDescription.default(''),
  category: TemplateCategory.default(''),
  destructive: z.boolean().default(false),
  argsSchema: ArgsJsonSchema.nullable().default(null),
});
export type CreateCommandTemplateRequest = z.infer<typeof CreateCommandTemplateRequestSchema>;

/**
 * POST /api/commands/templates/update (commands:write), addressed by key. Omitted fields keep their
 * value; `argsSchema: null` removes the schema. Strict, so a misspelt field is refused rather than
 * silently ignored. Existing commands are not re-validated.
 */
export const UpdateCommandTemplateRequestSchema = z.strictObject(
  {
    key: CommandTemplateKey,
    description: TemplateDescription.optional(),
    category: TemplateCategory.optional(),
    destructive: z.boolean().optional(),
    argsSchema: ArgsJsonSchema.nullable().optional(),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? `cannot be edited: ${issue.keys.join(', ')}` : undefined) },
);
export type UpdateCommandTemplateRequest = z.infer<typeof UpdateCommandTemplateRequestSchema>;
