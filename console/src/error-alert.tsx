// What went wrong, where every view says it: a paragraph screen readers announce, or nothing.
export function ErrorAlert(props: { error: string | null | undefined }) {
  return props.error ? (
    <p class="error" role="alert">
      {props.error}
    </p>
  ) : null;
}
