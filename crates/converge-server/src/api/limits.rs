//! What one client may cost the others: a per-token request rate (a
//! token bucket per token, in each replica: behind a balancer over N
//! replicas a token's rate is up to N times the limit), and how long a
//! request may run.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ipnet::IpNet;

/// A token's request rate: `per_second` on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: f64,
}

/// The limits the access check applies.
#[derive(Debug)]
pub(crate) struct Limits {
    pub limiter: Option<RateLimiter>,
    pub request_timeout: Duration,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpNet>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets by access token id.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<String, Bucket>>,
}

/// Buckets kept before the full ones (idle tokens) are dropped.
const MAX_BUCKETS: usize = 10_000;

impl RateLimiter {
    pub fn new(limit: RateLimit) -> RateLimiter {
        RateLimiter {
            limit: RateLimit {
                per_second: limit.per_second.max(f64::MIN_POSITIVE),
                burst: limit.burst.max(1.0),
            },
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request from `token`'s bucket: None if it may go now,
    /// else how long until it may.
    pub fn take(&self, token: &str) -> Option<Duration> {
        self.take_at(token, Instant::now())
    }

    fn take_at(&self, token: &str, now: Instant) -> Option<Duration> {
        let RateLimit { per_second, burst } = self.limit;
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(token) {
            buckets.retain(|_, b| {
                b.tokens + now.duration_since(b.at).as_secs_f64() * per_second < burst
            });
        }
        let bucket = buckets.entry(token.to_owned()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let refill = now.duration_since(bucket.at).as_secs_f64() * per_second;
        bucket.tokens = (bucket.tokens + refill).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            None
        } else {
            Some(Duration::from_secs_f64((1.0 - bucket.tokens) / per_second))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 10.0,
            burst: 3.0,
        });
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.take_at("a", t0), None);
        }
        let wait = limiter.take_at("a", t0).unwrap();
        assert!(wait > Duration::from_millis(90) && wait <= Duration::from_millis(100));
        // Another token has a bucket of its own.
        assert_eq!(limiter.take_at("b", t0), None);
        // A tenth of a second later, one more request may go.
        assert_eq!(limiter.take_at("a", t0 + Duration::from_millis(100)), None);
        assert!(limiter
            .take_at("a", t0 + Duration::from_millis(100))
            .is_some());
    }
}
