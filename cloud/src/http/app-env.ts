/**
 * The hono variables every request has. The caller's principal is not here: http/ sits below auth/,
 * so auth/require-scope.ts declares it (AuthEnv) and hono hands it to the handlers behind that
 * middleware, which also keeps `c.get('principal')` from type-checking where no key was checked.
 */
export type AppEnv = {
  Variables: {
    requestId: string;
  };
};
