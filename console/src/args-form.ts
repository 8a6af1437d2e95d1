// A form from a template's argsSchema (the server's JSON Schema subset). Scalars, enums and booleans get
// inputs; anything richer (arrays, nested objects, anyOf) is edited as JSON. The server validates either
// way and its 400 names the field (args.altitude), which the form shows beside it.

export interface ArgField {
  name: string;
  kind: 'number' | 'integer' | 'string' | 'boolean' | 'enum' | 'json';
  required: boolean;
  options: (string | number | boolean | null)[];
  title: string;
  min?: number;
  max?: number;
}

type Schema = Record<string, unknown>;

export function argFields(schema: Schema | null): ArgField[] {
  if (!schema || typeof schema.properties !== 'object' || schema.properties === null) return [];
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  return Object.entries(schema.properties as Record<string, Schema>).map(([name, property]) => {
    const type = property.type;
    const options = Array.isArray(property.enum) ? (property.enum as ArgField['options']) : [];
    const kind: ArgField['kind'] =
      options.length > 0 ? 'enum' : type === 'number' || type === 'integer' || type === 'string' || type === 'boolean' ? type : 'json';
    const field: ArgField = { name, kind, required: required.has(name), options, title: typeof property.description === 'string' ? property.description : typeof property.title === 'string' ? property.title : '' };
    if (typeof property.minimum === 'number') field.min = property.minimum;
    if (typeof property.maximum === 'number') field.max = property.maximum;
    return field;
  });
}

/** The form's strings → the args object; an empty optional field is left out, a bad number or JSON stays text for the server to name. */
export function argsFromForm(fields: readonly ArgField[], values: Record<string, string>): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const field of fields) {
    const raw = values[field.name] ?? '';
    if (raw === '' && field.kind !== 'boolean') continue;
    switch (field.kind) {
      case 'number':
      case 'integer': {
        const n = Number(raw);
        args[field.name] = raw.trim() !== '' && Number.isFinite(n) ? n : raw;
        break;
      }
      case 'boolean':
        if (raw !== '') args[field.name] = raw === 'true';
        break;
      case 'enum': {
        const option = field.options.find((o) => String(o) === raw);
        args[field.name] = option === undefined ? raw : option;
        break;
      }
      case 'json':
        try {
          args[field.name] = JSON.parse(raw);
        } catch {
          args[field.name] = raw;
        }
        break;
      default:
        args[field.name] = raw;
    }
  }
  return args;
}
