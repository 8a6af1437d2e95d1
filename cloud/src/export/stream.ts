/**
 * A byte stream that asks the generator for its next chunk only when the reader wants one (high-water
 * mark 0): the database is read at the pace the client downloads, because @hono/node-server reads the
 * next chunk only once the socket has drained. Cancelling (the client went away) ends the generator,
 * which stops reading pages.
 *
 * A failure after the status went out cannot become an error envelope. Erroring the stream would make
 * the HTTP server end the body with the error's text (internals, in the middle of a CSV) and a proper
 * last chunk, so the client would take a truncated file for a whole one. Instead `fail` cuts the
 * connection (the chunked body never ends: every HTTP client reports that) and the stream closes;
 * `fail` answers false when it had no connection to cut.
 */
export function pulled(chunks: AsyncGenerator<Uint8Array>, fail: (error: unknown) => boolean): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let next: IteratorResult<Uint8Array>;
        try {
          next = await chunks.next();
        } catch (error) {
          // Where the server gives no socket to cut (another runtime), erroring the stream aborts the response.
          if (fail(error)) controller.close();
          else controller.error(new Error('export failed after the response started'));
          return;
        }
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      async cancel() {
        await chunks.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}
