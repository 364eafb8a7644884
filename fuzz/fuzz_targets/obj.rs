#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tessera_fuzz::check("scene.obj", data, |p| composite::scene::Scene::obj_folder(p.parent().unwrap()))
});
