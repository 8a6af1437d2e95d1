// Bounds of a few inputs, without zod: the console checks its forms against them and loads no schema library.

/** Bounds of an arming's lifetime: ten seconds to twelve hours, fifteen minutes when unsaid. */
export const ARMING_TTL_SECONDS = { min: 10, max: 43_200, default: 900 } as const;

/** Bounds of `ackTimeoutSeconds` on dispatch: one second to one hour. */
export const ACK_TIMEOUT_SECONDS = { min: 1, max: 3600, default: 60 } as const;
