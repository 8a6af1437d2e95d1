/**
 * `options` completed from `defaults`: each key of `defaults` that `options` leaves undefined (or
 * null) takes its default. Only the keys of `defaults` are copied, so what a caller resolves itself
 * (stand-ins for tests, options built from others) stays out.
 */
export function withDefaults<T extends object>(defaults: T, options: { readonly [K in keyof T]?: T[K] | null | undefined }): T {
  const resolved = { ...defaults };
  for (const key of Object.keys(defaults) as Array<keyof T>) resolved[key] = options[key] ?? defaults[key];
  return resolved;
}
