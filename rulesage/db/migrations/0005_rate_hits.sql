-- The gateway's rate limits (asks per player, wrong admin tokens per client), shared by every gateway
-- replica: one row per counted request, read as a moving window (gateway/security.py: SharedRateLimiter).
-- Rows older than the longest window are deleted as the limiter goes.
CREATE UNLOGGED TABLE rate_hits (
    bucket  text        NOT NULL,   -- 'ask' | 'login'
    client  text        NOT NULL,   -- the player's address, as the gateway keys on it
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX rate_hits_window ON rate_hits (bucket, client, at);
CREATE INDEX rate_hits_age ON rate_hits (at);
