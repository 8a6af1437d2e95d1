/**
 * Following a dataset live, the telemetry side: what the live capability (cloud/src/live) reads from
 * storage. A feed per followed dataset reads each committed batch's rows once for all its followers
 * (live/feed.ts); a follower opens with its window read like Query (live/window.ts) and holds each
 * channel to its point budget (live/decimator.ts).
 */
export type { Sample } from './series/lttb.ts';
export { Decimator, MIN_FOLLOW_BUDGET } from './live/decimator.ts';
export { liveFeeds, type FeedChannel, type FeedRows, type FeedSubscriber, type LiveFeeds } from './live/feed.ts';
export { readWindow, resolveFollowChannels, type WindowSnapshot } from './live/window.ts';
