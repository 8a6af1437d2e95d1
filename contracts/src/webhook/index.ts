export {
  WEBHOOK_HEADERS,
  WEBHOOK_USER_AGENT,
  SIGNATURE_TOLERANCE_SECONDS,
  SIGNATURE_VERSION,
  WebhookVerificationError,
  computeSignature,
  signatureHeader,
  signWebhook,
  verifyWebhook,
  deliveryHeaders,
  deliveryTimestamp,
  formatSignatureHeader,
  signedPayloadHead,
} from './signature.ts';
export type {
  WebhookVerificationErrorCode,
  VerifiedWebhook,
  VerifyWebhookOptions,
  WebhookHeadersInput,
  SignWebhookInput,
} from './signature.ts';
