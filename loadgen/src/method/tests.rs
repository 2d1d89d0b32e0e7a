use super::*;

fn greeter() -> DescriptorPool {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("lblab-method-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("greeter.proto");
    std::fs::write(
        &file,
        "syntax = \"proto3\";\npackage demo.v1;\n\
         service Greeter {\n  rpc SayHello(HelloRequest) returns (HelloReply);\n  \
         rpc Chat(stream HelloRequest) returns (stream HelloReply);\n}\n\
         message HelloRequest { string name = 1; int32 times = 2; Inner inner = 3; }\n\
         message Inner { repeated int32 xs = 1; }\n\
         message HelloReply { string message = 1; }\n",
    )
    .unwrap();
    let pool = pool_from_protos(&[file], &[]).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    pool
}

#[test]
fn encodes_the_request_once_from_json() {
    let call = resolve(
        &greeter(),
        "demo.v1.Greeter/SayHello",
        Some(r#"{"name":"ab","times":3}"#),
    )
    .unwrap();
    assert_eq!(call.path.as_str(), "/demo.v1.Greeter/SayHello");
    // field 1 (string "ab"), field 2 (varint 3)
    assert_eq!(&call.request(0)[..], &[0x0a, 2, b'a', b'b', 0x10, 3]);
    // grpcurl's dotted form names the same method.
    let dotted = resolve(&greeter(), "demo.v1.Greeter.SayHello", None).unwrap();
    assert_eq!(dotted.path, call.path);
    assert!(dotted.request(0).is_empty());
    // A JSON array: its messages in turn.
    let list = resolve(
        &greeter(),
        "demo.v1.Greeter/SayHello",
        Some(r#"[{"name":"a"},{"name":"bc"}]"#),
    )
    .unwrap();
    assert_eq!(list.requests.len(), 2);
    assert_eq!(list.request(3), list.requests[1]);
    let e = resolve(
        &greeter(),
        "demo.v1.Greeter/SayHello",
        Some(r#"[{"name":"a"},{"nmae":1}]"#),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("message 2 of the array") && e.contains("nmae"),
        "{e}"
    );
}

#[test]
fn errors_name_the_field_the_service_and_the_method() {
    let pool = greeter();
    let err = |call: &str, json: &str| resolve(&pool, call, Some(json)).unwrap_err().to_string();
    let e = err("demo.v1.Greeter/SayHello", r#"{"nmae":"x"}"#);
    assert!(
        e.contains("nmae") && e.contains("demo.v1.HelloRequest"),
        "{e}"
    );
    let e = err("demo.v1.Greeter/SayHello", r#"{"name":"a","times":"many"}"#);
    assert!(e.contains("field times:"), "{e}");
    let e = err("demo.v1.Greeter/SayHello", r#"{"inner":{"xs":[1,"x"]}}"#);
    assert!(e.contains("field inner.xs:"), "{e}");
    let e = err("demo.v1.Greeter/SayHello", r#"{"name":"x"} trailing"#);
    assert!(e.contains("not valid JSON"), "{e}");
    let e = err("demo.v1.Greeter/SayBye", "{}");
    assert!(e.contains("SayBye") && e.contains("SayHello"), "{e}");
    let e = err("demo.v1.Nope/SayHello", "{}");
    assert!(
        e.contains("demo.v1.Nope") && e.contains("demo.v1.Greeter"),
        "{e}"
    );
    let e = err("demo.v1.Greeter/Chat", "{}");
    assert!(e.contains("stream of requests"), "{e}");
    assert!(split_call("Greeter").is_err());
    assert!(split_call("/").is_err());
}

#[test]
fn import_paths_add_to_the_files_own_folder() {
    let dir = std::env::temp_dir().join(format!("lblab-imports-{}", std::process::id()));
    let (own, shared) = (dir.join("svc"), dir.join("shared"));
    std::fs::create_dir_all(&own).unwrap();
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(
        own.join("local.proto"),
        "syntax = \"proto3\";\npackage d;\nmessage Local {}\n",
    )
    .unwrap();
    std::fs::write(
        shared.join("common.proto"),
        "syntax = \"proto3\";\npackage d;\nmessage Common {}\n",
    )
    .unwrap();
    std::fs::write(
        own.join("svc.proto"),
        "syntax = \"proto3\";\npackage d;\nimport \"local.proto\";\nimport \"common.proto\";\n\
         service S { rpc M(Local) returns (Common); }\n",
    )
    .unwrap();
    // One import beside the file, one in --import-path: both are found.
    let pool = pool_from_protos(&[own.join("svc.proto")], std::slice::from_ref(&shared))
        .expect("imports from the file's folder and the import path");
    assert!(pool.get_service_by_name("d.S").is_some());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn proto_errors_name_the_file() {
    let e = pool_from_protos(&[PathBuf::from("/nonexistent/x.proto")], &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("x.proto"), "{e}");
}
