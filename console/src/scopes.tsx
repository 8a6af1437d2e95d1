import type { Scope } from '@sortie/contracts';
import type { VNode } from 'preact';

/** What a control needs: disabled without the scope, saying which one (text, not only a tooltip). */
export interface Need {
  disabled: boolean;
  note: VNode<any> | null;
}

export function need(scopes: readonly Scope[], scope: Scope): Need {
  const ok = scopes.includes(scope);
  return { disabled: !ok, note: ok ? null : <span class="needs">{`needs the ${scope} scope`}</span> };
}
