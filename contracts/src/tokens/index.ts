export { randomToken, sha256Hex } from './random.ts';
export { timingSafeEqual, timingSafeEqualString } from './timing-safe-equal.ts';
export { ACK_TOKEN_PREFIX, generateAckToken, isAckToken, hashAckToken } from './ack-token.ts';
export { WEBHOOK_SECRET_PREFIX, generateWebhookSecret, isWebhookSecret } from './webhook-secret.ts';
export { API_KEY_HEADER, API_KEY_PREFIX, generateApiKey, isApiKeyFormat, hashApiKey } from './api-key.ts';
