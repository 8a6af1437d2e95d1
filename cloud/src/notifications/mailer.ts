import { createTransport } from 'nodemailer';

export interface Mailer {
  send(message: { to: string; subject: string; text: string }): Promise<void>;
}

/**
 * Email through the SMTP server named by SORTIE_SMTP_URL (`smtp://user:pass@host:587`, or `smtps://` for
 * implicit TLS). nodemailer rather than our own SMTP client: STARTTLS, AUTH and dot-stuffing are easy
 * to get subtly wrong and it is the maintained standard for Node.
 */
export function createMailer(input: { url: string; from: string }): Mailer {
  const transport = createTransport(input.url);
  return {
    send: async ({ to, subject, text }) => {
      await transport.sendMail({ from: input.from, to, subject, text });
    },
  };
}
