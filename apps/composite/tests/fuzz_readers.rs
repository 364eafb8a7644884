//! Mutation tests of every reader of the compositor (docs/formats.md): `.ap` files, OBJ
//! scenes, and the colour image + depth `.npy` that `encode` reads. Each mutant must be read
//! or refused with an error, never a panic, and no single allocation may exceed 256 MiB
//! while the memory budget is 64 MiB (a declared size is checked before allocating).

use std::path::Path;

use composite::ap::{ApImage, Encoded};
use composite::frame::Frame;
use composite::scene::Scene;
use kit::fuzz::{mutants, run_file_reader, CountingAllocator};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator::new();

const BUDGET: u64 = 64 << 20;
const LARGEST: usize = 256 << 20;

fn setup() {
    kit::budget::set(BUDGET);
    ALLOC.set_limit(LARGEST);
}

fn assert_bounded(name: &str) {
    let largest = ALLOC.largest();
    println!("fuzz {name}: largest allocation {largest} bytes");
    assert!(largest <= LARGEST, "{name}: an allocation of {largest} bytes");
}

/// A 23x7 frame with runs of active pixels, inactive gaps and a trailing inactive run.
fn frame() -> Frame {
    let mut f = Frame::empty(23, 7);
    for i in 0..f.pixels() {
        if (i / 5) % 3 != 0 && i < f.pixels() - 9 {
            f.color[i] = 0x8040_2010 | i as u32;
            f.depth[i] = 0.001 * i as f32;
        }
    }
    f
}

#[test]
fn ap_reader_survives_mutation() {
    setup();
    let encoded: Encoded = composite::cpu::encode::encode_serial(&frame());
    let bytes = ApImage::new(23, 7, [1, 2, 3, 4], encoded).unwrap().to_bytes();
    let cases = mutants(&bytes, composite::ap::HEADER_BYTES + 32, 3000, 4096, 17);
    let tally = run_file_reader("a.ap", &cases, ApImage::read);
    assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");
    assert_bounded("a.ap");
}

#[test]
fn obj_scene_reader_survives_mutation() {
    setup();
    let mut obj = String::from("# a cube\no cube\nmtllib cube.mtl\nusemtl red\n");
    for i in 0..8 {
        obj += &format!("v {} {} {}\nvn 0 0 1\n", i & 1, (i >> 1) & 1, (i >> 2) & 1);
    }
    obj += "f 1//1 2//2 4//4 3//3\nf 5 6 8 7\nf 1 2 6 5\nf 3 4 8 7\nf -8 -6 -2 -4\nf 2 4 8 6\n";
    let cases = mutants(obj.as_bytes(), 64, 3000, 1024, 23);
    // The reader takes a folder; each mutant is the folder's one .obj file.
    let read = |path: &Path| Scene::obj_folder(path.parent().unwrap());
    let tally = run_file_reader("scene.obj", &cases, read);
    assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");
    assert_bounded("scene.obj");
}

#[test]
fn colour_and_depth_inputs_survive_mutation() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    let f = frame();
    let (w, h) = (f.width as usize, f.height as usize);
    let (color, depth) = (dir.path().join("c.png"), dir.path().join("d.npy"));
    kit::image::save_rgba8(&color, w, h, &f.rgba_bytes([0; 4])).unwrap();
    kit::npy::write_f32(&depth, &[h, w], &f.depth).unwrap();
    let depth_cases = mutants(&std::fs::read(&depth).unwrap(), 160, 1500, 256, 29);
    let tally = run_file_reader("d.npy", &depth_cases, |d| Frame::load(&color, d));
    assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");
    let color_cases = mutants(&std::fs::read(&color).unwrap(), 64, 1500, 0, 31);
    let tally = run_file_reader("c.png", &color_cases, |c| Frame::load(c, &depth));
    assert!(tally.refused > 0, "{tally:?}");
    assert_bounded("colour and depth");
}
