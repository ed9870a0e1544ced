//! The RPC semantic conventions for gRPC spans, and the opt-in that chooses between the
//! conventions before 1.37 and those of 1.42 (`OTEL_SEMCONV_STABILITY_OPT_IN`).
//!
//! | `OTEL_SEMCONV_STABILITY_OPT_IN` | attributes |
//! | --- | --- |
//! | unset (or without `rpc`) | `rpc.system` = `grpc`, `rpc.service`, `rpc.method` (the method alone), integer `rpc.grpc.status_code` |
//! | `rpc` | `rpc.system.name` = `grpc`, fully-qualified `rpc.method` (`pkg.Service/Method`), string `rpc.response.status_code` (`UNAVAILABLE`) |
//! | `rpc/dup` | both sets; `rpc.method` (one key) is the fully-qualified one |
//!
//! Every mode adds `error.type` (the code's name) on errors, `server.address` and `server.port`.
//!
//! ```
//! use lens_span::rpc::RpcConventions;
//!
//! assert_eq!(RpcConventions::from_opt_in(None), RpcConventions::LEGACY);
//! assert_eq!(RpcConventions::from_opt_in(Some("http,rpc")), RpcConventions::STABLE);
//! assert_eq!(RpcConventions::from_opt_in(Some("rpc/dup")), RpcConventions::DUPLICATE);
//! ```

use opentelemetry::KeyValue;
use opentelemetry_semantic_conventions::attribute as semconv;

/// Which RPC attributes gRPC spans carry; read from `OTEL_SEMCONV_STABILITY_OPT_IN` once, when
/// an adapter is built ([`RpcConventions::from_env`]), never per call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RpcConventions {
    legacy: bool,
    stable: bool,
}

/// The environment variable of the semantic-convention opt-in.
pub const OPT_IN_ENV: &str = "OTEL_SEMCONV_STABILITY_OPT_IN";

impl Default for RpcConventions {
    fn default() -> Self {
        RpcConventions::LEGACY
    }
}

impl RpcConventions {
    /// The attributes lens wrote before the opt-in existed (opt-in unset).
    pub const LEGACY: RpcConventions = RpcConventions {
        legacy: true,
        stable: false,
    };
    /// Semantic conventions 1.42 (`rpc`).
    pub const STABLE: RpcConventions = RpcConventions {
        legacy: false,
        stable: true,
    };
    /// Both (`rpc/dup`).
    pub const DUPLICATE: RpcConventions = RpcConventions {
        legacy: true,
        stable: true,
    };

    /// From the value of `OTEL_SEMCONV_STABILITY_OPT_IN`: a comma-separated list in which
    /// `rpc/dup` wins over `rpc`; anything else (or nothing) keeps the legacy attributes.
    pub fn from_opt_in(value: Option<&str>) -> Self {
        let mut found = RpcConventions::LEGACY;
        for item in value.unwrap_or_default().split(',').map(str::trim) {
            match item {
                "rpc/dup" => return RpcConventions::DUPLICATE,
                "rpc" => found = RpcConventions::STABLE,
                _ => {}
            }
        }
        found
    }

    /// From the process environment (read now).
    pub fn from_env() -> Self {
        Self::from_opt_in(std::env::var(OPT_IN_ENV).ok().as_deref())
    }

    /// Whether the attributes before semantic conventions 1.37 are written.
    pub fn legacy(self) -> bool {
        self.legacy
    }

    /// Whether the attributes of semantic conventions 1.42 are written.
    pub fn stable(self) -> bool {
        self.stable
    }

    /// The attributes a gRPC span starts with: system, service and method, for a call to
    /// `/{service}/{method}` (`full` is `service/method`).
    #[allow(deprecated)] // the legacy keys are deprecated by the conventions that replace them
    pub fn push_method(
        self,
        attributes: &mut Vec<KeyValue>,
        service: Option<&str>,
        method: Option<&str>,
        full: &str,
    ) {
        if self.legacy {
            attributes.push(KeyValue::new(semconv::RPC_SYSTEM, "grpc"));
            if let Some(service) = service {
                attributes.push(KeyValue::new(semconv::RPC_SERVICE, service.to_owned()));
            }
        }
        if self.stable {
            attributes.push(KeyValue::new(semconv::RPC_SYSTEM_NAME, "grpc"));
            if !full.is_empty() {
                attributes.push(KeyValue::new(semconv::RPC_METHOD, full.to_owned()));
            }
        } else if let Some(method) = method {
            attributes.push(KeyValue::new(semconv::RPC_METHOD, method.to_owned()));
        }
    }

    /// The status attributes of a call that ended with gRPC status `code`.
    #[allow(deprecated)] // the legacy keys are deprecated by the conventions that replace them
    pub fn status_attributes(self, code: i32) -> impl Iterator<Item = KeyValue> {
        let legacy = self
            .legacy
            .then(|| KeyValue::new(semconv::RPC_GRPC_STATUS_CODE, i64::from(code)));
        let stable = self
            .stable
            .then(|| KeyValue::new(semconv::RPC_RESPONSE_STATUS_CODE, grpc_code_name(code)));
        legacy.into_iter().chain(stable)
    }
}

/// The name of a gRPC status code (`OK`, `UNAVAILABLE`); `UNKNOWN` for a number gRPC does not
/// define.
pub fn grpc_code_name(code: i32) -> &'static str {
    match code {
        0 => "OK",
        1 => "CANCELLED",
        2 => "UNKNOWN",
        3 => "INVALID_ARGUMENT",
        4 => "DEADLINE_EXCEEDED",
        5 => "NOT_FOUND",
        6 => "ALREADY_EXISTS",
        7 => "PERMISSION_DENIED",
        8 => "RESOURCE_EXHAUSTED",
        9 => "FAILED_PRECONDITION",
        10 => "ABORTED",
        11 => "OUT_OF_RANGE",
        12 => "UNIMPLEMENTED",
        13 => "INTERNAL",
        14 => "UNAVAILABLE",
        15 => "DATA_LOSS",
        16 => "UNAUTHENTICATED",
        _ => "UNKNOWN",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(conv: RpcConventions) -> Vec<String> {
        let mut attributes = Vec::new();
        conv.push_method(&mut attributes, Some("p.S"), Some("M"), "p.S/M");
        attributes.extend(conv.status_attributes(14));
        attributes
            .iter()
            .map(|kv| format!("{}={}", kv.key, kv.value))
            .collect()
    }

    #[test]
    fn each_opt_in_value_has_its_attributes() {
        assert_eq!(
            keys(RpcConventions::from_opt_in(None)),
            [
                "rpc.system=grpc",
                "rpc.service=p.S",
                "rpc.method=M",
                "rpc.grpc.status_code=14"
            ]
        );
        assert_eq!(
            keys(RpcConventions::from_opt_in(Some("rpc"))),
            [
                "rpc.system.name=grpc",
                "rpc.method=p.S/M",
                "rpc.response.status_code=UNAVAILABLE"
            ]
        );
        assert_eq!(
            keys(RpcConventions::from_opt_in(Some("rpc/dup, http"))),
            [
                "rpc.system=grpc",
                "rpc.service=p.S",
                "rpc.system.name=grpc",
                "rpc.method=p.S/M",
                "rpc.grpc.status_code=14",
                "rpc.response.status_code=UNAVAILABLE"
            ]
        );
        assert_eq!(
            RpcConventions::from_opt_in(Some("http,database")),
            RpcConventions::LEGACY
        );
        assert_eq!(
            RpcConventions::from_opt_in(Some("rpc,rpc/dup")),
            RpcConventions::DUPLICATE
        );
    }

    #[test]
    fn code_names() {
        assert_eq!(grpc_code_name(0), "OK");
        assert_eq!(grpc_code_name(16), "UNAUTHENTICATED");
        assert_eq!(grpc_code_name(17), "UNKNOWN");
    }
}
