// What the views' forms and buttons share: reading the element an input event came from, and running an
// action whose failure the view shows.
import { SortieApiError } from './api.ts';

/** The value of the input, select or textarea an event came from. */
export function valueOf(e: Event): string {
  return (e.target as HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement).value;
}

/** Whether the checkbox an event came from is checked. */
export function checkedOf(e: Event): boolean {
  return (e.target as HTMLInputElement).checked;
}

/** An `onInput` or `onChange` handler handing the element's value to `set`. */
export function onValue(set: (value: string) => void): (e: Event) => void {
  return (e) => set(valueOf(e));
}

/** A failure as a view shows it: the service's message and the fields it refused. */
export function errorText(e: unknown): string {
  if (e instanceof SortieApiError) return `${e.message}${e.details.length ? ` (${e.details.map((d) => `${d.field}: ${d.message}`).join('; ')})` : ''}`;
  return e instanceof Error ? e.message : String(e);
}

/**
 * A view's `act`: runs one of its actions, shows its failure (or clears the last one when it succeeds), and
 * in either case has the view read its data again (`reread`), since a failure can leave it changed too.
 */
export function actRunner(setError: (text: string) => void, reread: () => void): (what: () => Promise<unknown>) => Promise<void> {
  return async (what) => {
    try {
      await what();
      setError('');
    } catch (e) {
      setError(errorText(e));
    }
    reread();
  };
}
