import type { ArmingRecord, CommandRecord, CommandTemplate, ConsoleSession, DeliveryAttempt } from '@sortie/contracts';
import { ARMING_TTL_SECONDS, ACK_TIMEOUT_SECONDS } from '@sortie/contracts';
import { h, type ComponentChildren, type VNode } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { SortieApiError, type ConsoleApi } from './api.ts';
import { argFields, argsFromForm } from './args-form.ts';
import { formatIso, formatUtc } from './format.ts';
import { relTimeText } from './marks.ts';
import { mergeCommands } from './live.ts';
import { need } from './scopes.ts';

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

function message(e: unknown): string {
  if (e instanceof SortieApiError) return `${e.message}${e.details.length ? ` (${e.details.map((d) => `${d.field}: ${d.message}`).join('; ')})` : ''}`;
  return e instanceof Error ? e.message : String(e);
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
      (e: unknown) => current && setError(message(e)),
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

  const act = async (what: () => Promise<unknown>) => {
    try {
      await what();
      setError('');
    } catch (e) {
      setError(message(e));
    }
    setRefresh((n) => n + 1);
  };

  const expiresIn = arming?.armed && arming.expiresAt ? Math.max(0, Math.round((Date.parse(arming.expiresAt) - now) / 1000)) : 0;
  const armed = arming?.armed === true && expiresIn > 0;
  return h('section', { class: 'commands', 'aria-label': 'Commands' }, [
    h('h3', null, 'Commands'),
    read.note,
    error ? h('p', { class: 'error', role: 'alert' }, error) : null,
    h(ArmControls, { api, experimentId, datasetId, armed, expiresIn, write, act }),
    h(CreateCommand, { api, experimentId, datasetId, write, act, templates: templates ?? [] }),
    commands === undefined && !read.disabled ? h('p', { class: 'muted' }, 'Loading the command log…') : null,
    commands && commands.length === 0 ? h('p', { class: 'muted' }, 'No commands logged on this dataset.') : null,
    commands && commands.length > 0
      ? h('table', { class: 'command-log' }, [
          h('caption', null, "Command log, by relTime (seconds from the dataset's first sample; each command is marked there on the plots)"),
          h('thead', null, h('tr', null, ['relTime', 'Command', 'Status', 'Times (UTC)', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
          h(
            'tbody',
            null,
            commands.map((c) => h(CommandRow, { key: c.id, api, session, command: c, origin: props.origin, armed, act, templates })),
          ),
        ])
      : null,
  ]);
}

function ArmControls(props: { api: ConsoleApi; experimentId: string; datasetId: string; armed: boolean; expiresIn: number; write: ReturnType<typeof need>; act: (f: () => Promise<unknown>) => void }): VNode<any> {
  const [ttl, setTtl] = useState(String(ARMING_TTL_SECONDS.default));
  const { api, experimentId, datasetId } = props;
  return h('div', { class: 'arming', role: 'group', 'aria-label': 'Arming' }, [
    h('span', { class: `chip ${props.armed ? 'chip-armed' : 'chip-disarmed'}`, 'data-testid': 'arming-state' }, props.armed ? `Armed — expires in ${props.expiresIn} s` : 'Disarmed'),
    h('label', { for: 'arm-ttl' }, 'TTL (s)'),
    h('input', { id: 'arm-ttl', type: 'number', min: ARMING_TTL_SECONDS.min, max: ARMING_TTL_SECONDS.max, value: ttl, onInput: (e: Event) => setTtl((e.target as HTMLInputElement).value), disabled: props.write.disabled }),
    h('button', { type: 'button', disabled: props.write.disabled, onClick: () => props.act(() => api.arm({ experimentId, datasetId, ttlSeconds: Number(ttl) })) }, 'Arm'),
    h('button', { type: 'button', disabled: props.write.disabled || !props.armed, onClick: () => props.act(() => api.disarm(experimentId, datasetId)) }, 'Disarm'),
    props.write.note,
  ]);
}

function CreateCommand(props: { api: ConsoleApi; experimentId: string; datasetId: string; write: ReturnType<typeof need>; act: (f: () => Promise<unknown>) => void; templates: CommandTemplate[] }): VNode<any> {
  const { templates } = props;
  const [templateKey, setTemplateKey] = useState('');
  const [text, setText] = useState('');
  const [relTime, setRelTime] = useState('0');
  const [values, setValues] = useState<Record<string, string>>({});
  const template = templates.find((t) => t.key === templateKey);
  const fields = useMemo(() => argFields(template?.argsSchema ?? null), [template]);
  const disabled = props.write.disabled;
  return h(
    'form',
    {
      class: 'create-command',
      'aria-label': 'Log a command',
      onSubmit: (e: Event) => {
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
      },
    },
    [
      h('label', { for: 'cmd-template' }, 'Template'),
      h(
        'select',
        { id: 'cmd-template', value: templateKey, disabled, onChange: (e: Event) => (setTemplateKey((e.target as HTMLSelectElement).value), setValues({})) },
        [h('option', { value: '' }, '(none: free-form)'), ...templates.map((t) => h('option', { value: t.key }, `${t.key}${t.destructive ? ' (destructive)' : ''}`))],
      ),
      h('label', { for: 'cmd-text' }, 'Command text'),
      h('input', { id: 'cmd-text', value: text, disabled, placeholder: templateKey || 'e.g. TAKEOFF 20', onInput: (e: Event) => setText((e.target as HTMLInputElement).value) }),
      h('label', { for: 'cmd-reltime', title: "seconds from the dataset's first sample" }, 'relTime (s from first sample)'),
      h('input', { id: 'cmd-reltime', type: 'number', step: 'any', value: relTime, disabled, onInput: (e: Event) => setRelTime((e.target as HTMLInputElement).value) }),
      ...fields.flatMap((f): VNode<any>[] => {
        const id = `arg-${f.name}`;
        const label = h('label', { for: id }, `${f.name}${f.required ? ' *' : ''}${f.title ? ` — ${f.title}` : ''}`);
        const set = (e: Event) => setValues({ ...values, [f.name]: (e.target as HTMLInputElement).value });
        if (f.kind === 'enum' || f.kind === 'boolean') {
          const options = f.kind === 'boolean' ? ['true', 'false'] : f.options.map(String);
          return [label, h('select', { id, value: values[f.name] ?? '', disabled, onChange: set }, [h('option', { value: '' }, '—'), ...options.map((o) => h('option', { value: o }, o))])];
        }
        return [
          label,
          h('input', { id, type: f.kind === 'number' || f.kind === 'integer' ? 'number' : 'text', step: f.kind === 'integer' ? '1' : 'any', min: f.min, max: f.max, required: f.required, value: values[f.name] ?? '', disabled, onInput: set }),
        ];
      }),
      h('button', { type: 'submit', disabled: disabled || !(text || templateKey) }, 'Log command'),
      props.write.note,
    ],
  );
}

const STATUS_LABEL: Record<CommandRecord['status'], string> = { logged: 'logged', queued: 'queued', acked: 'acked', nacked: 'nacked', timed_out: 'timed out' };

function CommandRow(props: { api: ConsoleApi; session: ConsoleSession; command: CommandRecord; origin: number | undefined; armed: boolean; act: (f: () => Promise<unknown>) => void; templates: CommandTemplate[] | undefined }): VNode<any> {
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
  const destructive = c.templateKey ? (props.templates === undefined ? true : (props.templates.find((t) => t.key === c.templateKey)?.destructive ?? true)) : false;

  const times = [
    ['issued', c.issuedAt],
    ['dispatched', c.queuedAt],
    ['delivered', c.deliveredAt],
    [c.status === 'nacked' ? 'nacked' : 'acked', c.ackedAt],
    ['vehicle time', c.vehicleTime],
    ['ack deadline', c.status === 'queued' || c.status === 'timed_out' ? c.ackDeadlineAt : null],
  ].filter(([, t]) => t) as [string, string][];
  const close = () => (setConfirming(undefined), setTyped(''));

  return h('tr', { 'data-command': c.id, 'data-status': c.status }, [
    h('td', null, [
      h('span', { class: 'reltime', title: "seconds from the dataset's first sample" }, relTimeText(c.relTime)),
      // Where that puts it on the flight's time axis.
      props.origin !== undefined ? h('div', { class: 'muted times', title: "where it stands on the flight's time axis (UTC)" }, formatUtc(props.origin + c.relTime).slice(11)) : null,
    ]),
    h('td', { class: 'command-text' }, [h('code', null, c.commandText), c.templateKey ? h('span', { class: 'muted' }, ` (${c.templateKey})`) : null, Object.keys(c.args).length ? h('div', { class: 'muted' }, JSON.stringify(c.args)) : null]),
    h('td', null, [
      h('span', { class: `chip chip-${c.status}`, 'data-testid': 'command-status' }, STATUS_LABEL[c.status]),
      retracted ? h('span', { class: 'chip chip-retracted' }, 'retracted') : null,
      c.statusDetail ? h('div', { class: 'muted' }, c.statusDetail) : null,
    ]),
    h('td', null, h('ul', { class: 'times' }, times.map(([label, t], i) => h('li', null, `${label}: ${shortTime(t, i === 0 ? undefined : c.issuedAt)}`)))),
    h('td', null, [
      h('div', { class: 'row-actions' }, [
        h(
          'button',
          {
            type: 'button',
            disabled: write.disabled || !canDispatch || !props.armed,
            title: !props.armed && !write.disabled ? 'Arm the dataset first' : undefined,
            onClick: (e: MouseEvent) => setConfirming((e.currentTarget as HTMLElement).getBoundingClientRect()),
          },
          'Dispatch…',
        ),
        h('button', { type: 'button', disabled: write.disabled || !canDispatch, onClick: () => props.act(() => api.retractCommand(c.id, 'retracted in the console')) }, 'Retract'),
        write.note,
        h(
          'button',
          { type: 'button', disabled: hooksRead.disabled, 'aria-expanded': attempts !== undefined, onClick: () => (attempts === undefined ? api.deliveries(c.id).then(setAttempts, () => setAttempts([])) : setAttempts(undefined)) },
          `Deliveries (${c.deliveryAttempts})`,
        ),
        hooksRead.note,
      ]),
      confirming
        ? h(
            ConfirmDialog,
            { anchor: confirming, label: `Confirm dispatch of ${c.commandText}`, onClose: close },
            h(
              'form',
              {
                class: 'confirm',
                onSubmit: (e: Event) => {
                  e.preventDefault();
                  close();
                  props.act(() => api.dispatchCommand(c.id, Number(timeout)));
                },
              },
              [
                h('strong', null, `Dispatch ${c.commandText} (${relTimeText(c.relTime)})`),
                h('label', { for: `timeout-${c.id}` }, 'Ack timeout (s)'),
                h('input', { id: `timeout-${c.id}`, type: 'number', min: ACK_TIMEOUT_SECONDS.min, max: ACK_TIMEOUT_SECONDS.max, value: timeout, onInput: (e: Event) => setTimeoutSeconds((e.target as HTMLInputElement).value) }),
                destructive ? h('label', { for: `typed-${c.id}` }, `Destructive: type "${c.commandText}" to confirm`) : h('p', null, `Send "${c.commandText}" to the vehicle's endpoints?`),
                destructive ? h('input', { id: `typed-${c.id}`, value: typed, autocomplete: 'off', autofocus: true, onInput: (e: Event) => setTyped((e.target as HTMLInputElement).value) }) : null,
                h('div', { class: 'row-actions' }, [
                  h('button', { type: 'submit', disabled: destructive && typed !== c.commandText }, 'Confirm dispatch'),
                  h('button', { type: 'button', onClick: close }, 'Cancel'),
                ]),
              ],
            ),
          )
        : null,
      attempts
        ? h(
            'ul',
            { class: 'attempts', 'aria-label': 'Delivery attempts' },
            attempts.length === 0
              ? [h('li', { class: 'muted' }, 'No delivery attempts yet.')]
              : attempts.map((a) =>
                  h('li', { key: a.id }, [
                    h('span', { class: `chip ${a.statusCode >= 200 && a.statusCode < 300 ? 'chip-acked' : 'chip-nacked'}` }, a.statusCode === 0 ? 'no answer' : `HTTP ${a.statusCode}`),
                    ` #${a.attempt} ${a.durationMs} ms ${formatIso(a.attemptedAt)} → ${a.endpointUrl}`,
                    a.error ? h('div', { class: 'error' }, a.error) : null,
                    a.response ? h('pre', { class: 'excerpt' }, a.response.slice(0, 300)) : null,
                  ]),
                ),
          )
        : null,
    ]),
  ]);
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
  return h('dialog', { ref: dialog, class: 'confirm-dialog', 'aria-label': props.label, onClose: props.onClose }, props.children);
}
