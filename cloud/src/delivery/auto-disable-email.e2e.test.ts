import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually, newScenario, startDeliveryFixture, type DeliveryFixture } from '../testing/delivery-fixture.ts';
import { startFakeSmtp } from '../testing/fake-smtp.ts';
import { AUTO_DISABLE_AFTER_FAILURES } from './endpoint-health.ts';

/** With SORTIE_SMTP_URL set, owners with an email address are also emailed when an endpoint is disabled. */
let f: DeliveryFixture;
let smtp: Awaited<ReturnType<typeof startFakeSmtp>>;
beforeAll(async () => {
  smtp = await startFakeSmtp();
  f = await startDeliveryFixture({ queue: 'memory', env: { SORTIE_SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, SORTIE_SMTP_FROM: 'Sortie <ops@sortie.test>' } });
});
afterAll(async () => {
  await f?.stop();
  await smtp?.close();
});

it('emails each owner once, and records that the notification was emailed', async () => {
  const s = await newScenario(f);
  try {
    await f.t.service.ctx.db.updateTable('users').set({ email: 'owner@flight-test.example' }).where('id', '=', s.org.ownerUserId).execute();
    s.receiver.answer(() => ({ status: 500 }));
    await s.dispatch();
    const mail = await eventually(async () => smtp.mails[0], 30_000, 'the email');
    expect(mail.from).toBe('ops@sortie.test');
    expect(mail.to).toEqual(['owner@flight-test.example']);
    const text = mail.data.replace(/=\n/g, '');
    // The subject is MIME-encoded (it quotes the label) and may be folded over lines.
    expect(text).toMatch(/^Subject: [^\n]*Webhook_endpoint[^\n]*(\n [^\n]*)*disabled/m);
    expect(text).toContain('Sortie stopped delivering to https://receiver.test');
    expect(s.receiver.requests).toHaveLength(AUTO_DISABLE_AFTER_FAILURES);
    const row = await eventually(async () => {
      const r = await f.t.service.ctx.db.selectFrom('notifications').selectAll().where('organization_id', '=', s.org.organizationId).executeTakeFirst();
      return r?.emailed_at ? r : undefined;
    });
    expect(row.user_id).toBe(s.org.ownerUserId);
    expect(smtp.mails).toHaveLength(1);
  } finally {
    await s.close();
  }
});
