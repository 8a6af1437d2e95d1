import type { Scope } from '@sortie/contracts';

/** Who is calling, established by the API key. Every query is scoped by `organizationId`. */
export interface Principal {
  organizationId: string;
  keyId: string;
  userId: string | null;
  scopes: ReadonlySet<Scope>;
}

export type AppEnv = {
  Variables: {
    requestId: string;
    principal: Principal;
  };
};
