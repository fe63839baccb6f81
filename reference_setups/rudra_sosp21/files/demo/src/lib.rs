//! The README's two bug classes in one crate: a panic-safety bug (a value read out with
//! ptr::read, a user closure that may panic, then ptr::write: a double drop on unwinding) and a
//! Sync impl with no bound on T.
use std::ptr;

pub struct Wrapper<T> {
    inner: *mut T,
}

unsafe impl<T> Sync for Wrapper<T> {}

impl<T> Wrapper<T> {
    pub fn get(&self) -> *mut T {
        self.inner
    }
}

pub fn map_reference<T, F: FnMut(T) -> T>(v: &mut [T], mut f: F) {
    unsafe {
        for x in v.iter_mut() {
            let old = ptr::read(x);
            let new = f(old);
            ptr::write(x, new);
        }
    }
}
