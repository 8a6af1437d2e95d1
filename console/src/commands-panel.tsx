import type { ArmingRecord, CommandRecord, CommandTemplate, ConsoleSession, DeliveryAttempt } from '@sortie/contracts';
import type { ComponentChildren, VNode } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ConsoleApi } from './api.ts';
import { ACK_TIMEOUT_SECONDS, ARMING_TTL_SECONDS } from './service.ts';
import { argFields, argsFromForm } from './args-form.ts';
import { formatIso, formatUtc } from './format.ts';
import { relTimeText } from './marks.ts';
import { mergeCommands } from './live.ts';
import { need } from './scopes.tsx';
import { actRunner, errorText, onValue, valueOf } from './actions.ts';
import { ErrorAlert } from './error-alert.tsx';

// Without a Follow stream (a key without telemetry:read, or while it reconnects), a queued command is
// re-read at this period, so its status still shows within a second of changing.
const FALLBACK_POLL_MS = 500;

interface Props {
  api: ConsoleApi;
  session: ConsoleSession;
  experimentId: string;
  datasetId: string;
  /** The dataset's first sample (Unix seconds), where relTime 0 is, once known. */
  origin: number | undefined;
  onCommands: (commands: CommandRecord[]) => void;
  /** Command changes from the dataset's Follow stream, and how many updates carried some. */
  live?: { commands: ReadonlyMap<string, CommandRecord>; seen: number };
  /** Whether that stream is connected: the log is then kept current by it, with no polling. */
  followed: boolean;
}

export function CommandsPanel(props: Props): VNode<any> {
  const { api, session, experimentId, datasetId } = props;
  const [commands, setCommands] = useState<CommandRecord[] | undefined>();
  const [arming, setArming] = useState<ArmingRecord | undefined>();
  const [now, setNow] = useState(Date.now());
  const [error, setError] = useState('');
  const [refresh, setRefresh] = useState(0);
  // Undefined until loaded: a row of a templated command asks for its text to be typed until the
  // template is known not to be destructive, so a fast click never skips the confirmation.
  const [templates, setTemplates] = useState<CommandTemplate[] | undefined>();
  const read = need(session.scopes, 'commands:read');
  const write = need(session.scopes, 'commands:write');

  useEffect(() => {
    if (!read.disabled) api.templates().then(setTemplates, () => setTemplates([]));
  }, [api]);

  useEffect(() => {
    if (read.disabled) return;
    let current = true;
    Promise.all([api.commands(experimentId, datasetId), api.arming(experimentId, datasetId)]).then(
      ([list, arm]) => {
        if (!current) return;
        // Merged, not replaced: the stream may already have told of a later state than this read saw.
        setCommands((held) => mergeCommands(held ?? [], list));
        setArming(arm);
      },
      (e: unknown) => current && setError(errorText(e)),
    );
    return () => {
      current = false;
    };
  }, [api, experimentId, datasetId, refresh]);

  // Live: the Follow stream reports each command whose status changed (dispatched, delivered, acked…).
  const live = props.live;
  useEffect(() => {
    if (live && live.commands.size > 0) setCommands((held) => mergeCommands(held ?? [], live.commands.values()));
  }, [live?.commands, live?.seen]);
  useEffect(() => {
    if (commands) props.onCommands(commands);
  }, [commands]);
  // Without the stream, a command waiting for its ack is re-read so its answer appears without a reload.
  const waiting = commands?.some((c) => c.status === 'queued') ?? false;
  useEffect(() => {
    if (!waiting || props.followed) return;
    const timer = setInterval(() => setRefresh((n) => n + 1), FALLBACK_POLL_MS);
    return () => clearInterval(timer);
  }, [waiting, props.followed]);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);

  const act = actRunner(setError, () => setRefresh((n) => n + 1));

  const expiresIn = arming?.armed && arming.expiresAt ? Math.max(0, Math.round((Date.parse(arming.expiresAt) - now) / 1000)) : 0;
  const armed = arming?.armed === true && expiresIn > 0;
  return (
    <section class="commands" aria-label="Commands">
      <h3>Commands</h3>
      {read.note}
      <ErrorAlert error={error} />
      <ArmControls api={api} experimentId={experimentId} datasetId={datasetId} armed={armed} expiresIn={expiresIn} write={write} act={act} />
      <CreateCommand api={api} experimentId={experimentId} datasetId={datasetId} write={write} act={act} templates={templates ?? []} />
      {commands === undefined && !read.disabled ? <p class="muted">Loading the command log…</p> : null}
      {commands && commands.length === 0 ? <p class="muted">No commands logged on this dataset.</p> : null}
      {commands && commands.length > 0 ? (
        <table class="command-log">
          <caption>Command log, by relTime (seconds from the dataset's first sample; each command is marked there on the plots)</caption>
          <thead>
            <tr>
              {['relTime', 'Command', 'Status', 'Times (UTC)', 'Actions'].map((t) => (
                <th scope="col">{t}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {commands.map((c) => (
              <CommandRow key={c.id} api={api} session={session} command={c} origin={props.origin} armed={armed} act={act} templates={templates} />
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

function ArmControls(props: {
  api: ConsoleApi;
  experimentId: string;
  datasetId: string;
  armed: boolean;
  expiresIn: number;
  write: ReturnType<typeof need>;
  act: (f: () => Promise<unknown>) => void;
}): VNode<any> {
  const [ttl, setTtl] = useState(String(ARMING_TTL_SECONDS.default));
  const { api, experimentId, datasetId } = props;
  return (
    <div class="arming" role="group" aria-label="Arming">
      <span class={`chip ${props.armed ? 'chip-armed' : 'chip-disarmed'}`} data-testid="arming-state">
        {props.armed ? `Armed — expires in ${props.expiresIn} s` : 'Disarmed'}
      </span>
      <label for="arm-ttl">TTL (s)</label>
      <input
        id="arm-ttl"
        type="number"
        min={ARMING_TTL_SECONDS.min}
        max={ARMING_TTL_SECONDS.max}
        value={ttl}
        onInput={onValue(setTtl)}
        disabled={props.write.disabled}
      />
      <button type="button" disabled={props.write.disabled} onClick={() => props.act(() => api.arm({ experimentId, datasetId, ttlSeconds: Number(ttl) }))}>
        Arm
      </button>
      <button type="button" disabled={props.write.disabled || !props.armed} onClick={() => props.act(() => api.disarm(experimentId, datasetId))}>
        Disarm
      </button>
      {props.write.note}
    </div>
  );
}

function CreateCommand(props: {
  api: ConsoleApi;
  experimentId: string;
  datasetId: string;
  write: ReturnType<typeof need>;
  act: (f: () => Promise<unknown>) => void;
  templates: CommandTemplate[];
}): VNode<any> {
  const { templates } = props;
  const [templateKey, setTemplateKey] = useState('');
  const [text, setText] = useState('');
  const [relTime, setRelTime] = useState('0');
  const [values, setValues] = useState<Record<string, string>>({});
  const template = templates.find((t) => t.key === templateKey);
  const fields = useMemo(() => argFields(template?.argsSchema ?? null), [template]);
  const disabled = props.write.disabled;
  return (
    <form
      class="create-command"
      aria-label="Log a command"
      onSubmit={(e: Event) => {
        e.preventDefault();
        props.act(async () => {
          await props.api.createCommand({
            experimentId: props.experimentId,
            datasetId: props.datasetId,
            commandText: text || templateKey,
            templateKey,
            args: argsFromForm(fields, values),
            relTime: Number(relTime),
          });
          setText('');
          setValues({});
        });
      }}
    >
      <label for="cmd-template">Template</label>
      <select id="cmd-template" value={templateKey} disabled={disabled} onChange={(e: Event) => (setTemplateKey(valueOf(e)), setValues({}))}>
        <option value="">(none: free-form)</option>
        {templates.map((t) => (
          <option value={t.key}>{`${t.key}${t.destructive ? ' (destructive)' : ''}`}</option>
        ))}
      </select>
      <label for="cmd-text">Command text</label>
      <input id="cmd-text" value={text} disabled={disabled} placeholder={templateKey || 'e.g. TAKEOFF 20'} onInput={onValue(setText)} />
      <label for="cmd-reltime" title="seconds from the dataset's first sample">
        relTime (s from first sample)
      </label>
      <input id="cmd-reltime" type="number" step="any" value={relTime} disabled={disabled} onInput={onValue(setRelTime)} />
      {fields.flatMap((f): VNode<any>[] => {
        const id = `arg-${f.name}`;
        const label = <label for={id}>{`${f.name}${f.required ? ' *' : ''}${f.title ? ` — ${f.title}` : ''}`}</label>;
        const set = (e: Event) => setValues({ ...values, [f.name]: valueOf(e) });
        if (f.kind === 'enum' || f.kind === 'boolean') {
          const options = f.kind === 'boolean' ? ['true', 'false'] : f.options.map(String);
          return [
            label,
            <select id={id} value={values[f.name] ?? ''} disabled={disabled} onChange={set}>
              <option value="">—</option>
              {options.map((o) => (
                <option value={o}>{o}</option>
              ))}
            </select>,
          ];
        }
        return [
          label,
          <input
            id={id}
            // Preact types an input's props as a union by `type`; a type chosen at run time is either member.
            type={(f.kind === 'number' || f.kind === 'integer' ? 'number' : 'text') as 'text'}
            step={f.kind === 'integer' ? '1' : 'any'}
            min={f.min}
            max={f.max}
            required={f.required}
            value={values[f.name] ?? ''}
            disabled={disabled}
            onInput={set}
          />,
        ];
      })}
      <button type="submit" disabled={disabled || !(text || templateKey)}>
        Log command
      </button>
      {props.write.note}
    </form>
  );
}

const STATUS_LABEL: Record<CommandRecord['status'], string> = { logged: 'logged', queued: 'queued', acked: 'acked', nacked: 'nacked', timed_out: 'timed out' };

function CommandRow(props: {
  api: ConsoleApi;
  session: ConsoleSession;
  command: CommandRecord;
  origin: number | undefined;
  armed: boolean;
  act: (f: () => Promise<unknown>) => void;
  templates: CommandTemplate[] | undefined;
}): VNode<any> {
  const { command: c, api } = props;
  // Where the Dispatch… button was when clicked: the confirmation opens there.
  const [confirming, setConfirming] = useState<DOMRect | undefined>();
  const [typed, setTyped] = useState('');
  const [timeout, setTimeoutSeconds] = useState(String(ACK_TIMEOUT_SECONDS.default));
  const [attempts, setAttempts] = useState<DeliveryAttempt[] | undefined>();
  const write = need(props.session.scopes, 'commands:write');
  const hooksRead = need(props.session.scopes, 'webhooks:read');
  const retracted = c.retractedAt !== null;
  const canDispatch = c.status === 'logged' && !retracted;

  useEffect(() => {
    if (attempts !== undefined) api.deliveries(c.id).then(setAttempts, () => undefined);
  }, [c.status, c.deliveryAttempts]);
  // A template not (yet) known counts as destructive; a free-form command has no template to say so.
  const destructive = c.templateKey
    ? props.templates === undefined
      ? true
      : (props.templates.find((t) => t.key === c.templateKey)?.destructive ?? true)
    : false;

  const times = [
    ['issued', c.issuedAt],
    ['dispatched', c.queuedAt],
    ['delivered', c.deliveredAt],
    [c.status === 'nacked' ? 'nacked' : 'acked', c.ackedAt],
    ['vehicle time', c.vehicleTime],
    ['ack deadline', c.status === 'queued' || c.status === 'timed_out' ? c.ackDeadlineAt : null],
  ].filter(([, t]) => t) as [string, string][];
  const close = () => (setConfirming(undefined), setTyped(''));

  return (
    <tr data-command={c.id} data-status={c.status}>
      <td>
        <span class="reltime" title="seconds from the dataset's first sample">
          {relTimeText(c.relTime)}
        </span>
        {props.origin !== undefined ? (
          <div class="muted times" title="where it stands on the flight's time axis (UTC)">
            {formatUtc(props.origin + c.relTime).slice(11)}
          </div>
        ) : null}
      </td>
      <td class="command-text">
        <code>{c.commandText}</code>
        {c.templateKey ? <span class="muted">{` (${c.templateKey})`}</span> : null}
        {Object.keys(c.args).length ? <div class="muted">{JSON.stringify(c.args)}</div> : null}
      </td>
      <td>
        <span class={`chip chip-${c.status}`} data-testid="command-status">
          {STATUS_LABEL[c.status]}
        </span>
        {retracted ? <span class="chip chip-retracted">retracted</span> : null}
        {c.statusDetail ? <div class="muted">{c.statusDetail}</div> : null}
      </td>
      <td>
        <ul class="times">
          {times.map(([label, t], i) => (
            <li>{`${label}: ${shortTime(t, i === 0 ? undefined : c.issuedAt)}`}</li>
          ))}
        </ul>
      </td>
      <td>
        <div class="row-actions">
          <button
            type="button"
            disabled={write.disabled || !canDispatch || !props.armed}
            title={!props.armed && !write.disabled ? 'Arm the dataset first' : undefined}
            onClick={(e: MouseEvent) => setConfirming((e.currentTarget as HTMLElement).getBoundingClientRect())}
          >
            Dispatch…
          </button>
          <button type="button" disabled={write.disabled || !canDispatch} onClick={() => props.act(() => api.retractCommand(c.id, 'retracted in the console'))}>
            Retract
          </button>
          {write.note}
          <button
            type="button"
            disabled={hooksRead.disabled}
            aria-expanded={attempts !== undefined}
            onClick={() => (attempts === undefined ? api.deliveries(c.id).then(setAttempts, () => setAttempts([])) : setAttempts(undefined))}
          >{`Deliveries (${c.deliveryAttempts})`}</button>
          {hooksRead.note}
        </div>
        {confirming ? (
          <ConfirmDialog anchor={confirming} label={`Confirm dispatch of ${c.commandText}`} onClose={close}>
            <form
              class="confirm"
              onSubmit={(e: Event) => {
                e.preventDefault();
                close();
                props.act(() => api.dispatchCommand(c.id, Number(timeout)));
              }}
            >
              <strong>{`Dispatch ${c.commandText} (${relTimeText(c.relTime)})`}</strong>
              <label for={`timeout-${c.id}`}>Ack timeout (s)</label>
              <input
                id={`timeout-${c.id}`}
                type="number"
                min={ACK_TIMEOUT_SECONDS.min}
                max={ACK_TIMEOUT_SECONDS.max}
                value={timeout}
                onInput={onValue(setTimeoutSeconds)}
              />
              {destructive ? (
                <label for={`typed-${c.id}`}>{`Destructive: type "${c.commandText}" to confirm`}</label>
              ) : (
                <p>{`Send "${c.commandText}" to the vehicle's endpoints?`}</p>
              )}
              {destructive ? <input id={`typed-${c.id}`} value={typed} autocomplete="off" autofocus onInput={onValue(setTyped)} /> : null}
              <div class="row-actions">
                <button type="submit" disabled={destructive && typed !== c.commandText}>
                  Confirm dispatch
                </button>
                <button type="button" onClick={close}>
                  Cancel
                </button>
              </div>
            </form>
          </ConfirmDialog>
        ) : null}
        {attempts ? (
          <ul class="attempts" aria-label="Delivery attempts">
            {attempts.length === 0
              ? [<li class="muted">No delivery attempts yet.</li>]
              : attempts.map((a) => (
                  <li key={a.id}>
                    <span class={`chip ${a.statusCode >= 200 && a.statusCode < 300 ? 'chip-acked' : 'chip-nacked'}`}>
                      {a.statusCode === 0 ? 'no answer' : `HTTP ${a.statusCode}`}
                    </span>
                    {` #${a.attempt} ${a.durationMs} ms ${formatIso(a.attemptedAt)} → ${a.endpointUrl}`}
                    {a.error ? <div class="error">{a.error}</div> : null}
                    {a.response ? <pre class="excerpt">{a.response.slice(0, 300)}</pre> : null}
                  </li>
                ))}
          </ul>
        ) : null}
      </td>
    </tr>
  );
}

/** A log time in UTC without its date when it is the same day as `sameDayAs`: the column stays narrow, one line each. */
function shortTime(text: string, sameDayAs: string | undefined): string {
  const full = formatIso(text).replace(/ UTC$/, '');
  return sameDayAs !== undefined && formatIso(sameDayAs).slice(0, 10) === full.slice(0, 10) ? full.slice(11) : full;
}

/**
 * A modal confirmation opened beside the control that asked for it (below it, or above when the
 * viewport has no room below), kept inside the viewport: the command log sits low on the page, and a
 * form opened in place of the buttons could land below the fold. Escape cancels.
 */
function ConfirmDialog(props: { anchor: DOMRect; label: string; onClose: () => void; children?: ComponentChildren }): VNode<any> {
  const dialog = useRef<HTMLDialogElement>(null);
  useLayoutEffect(() => {
    const d = dialog.current!;
    if (!d.open) d.showModal();
    const { width, height } = d.getBoundingClientRect();
    const { anchor } = props;
    const right = document.documentElement.clientWidth - 8;
    const bottom = window.innerHeight - 8;
    d.style.left = `${Math.max(8, Math.min(right - width, anchor.left))}px`;
    d.style.top = `${anchor.bottom + 4 + height <= bottom ? anchor.bottom + 4 : Math.max(8, anchor.top - 4 - height)}px`;
  }, [props.anchor]);
  return (
    <dialog ref={dialog} class="confirm-dialog" aria-label={props.label} onClose={props.onClose}>
      {props.children}
    </dialog>
  );
}
