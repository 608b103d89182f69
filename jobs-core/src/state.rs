//! Shared state injected into handlers: `State<T>` parameters, filled from the worker's map.

use std::any::{Any, TypeId};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::fast_hash::HashMap;
use crate::JobError;

/// A value the worker was given with `.state(value)`, injected into every handler that takes a
/// `State<T>` parameter.
///
/// ```
/// use jobs_core::State;
///
/// struct Mailer { from: &'static str }
/// let mailer = State::new(Mailer { from: "noreply@example.com" });
/// assert_eq!(mailer.from, "noreply@example.com");
/// ```
pub struct State<T: ?Sized>(pub Arc<T>);

/// Another name for [`State`], for modules where `State` means something else (such as
/// `axum::extract::State`): `#[job]` injects a `JobState<T>` parameter just the same.
///
/// ```
/// use jobs_core::{JobState, State};
///
/// let mailer: JobState<&str> = State::new("noreply@example.com");
/// assert_eq!(*mailer, "noreply@example.com");
/// ```
pub type JobState<T> = State<T>;

impl<T> State<T> {
    /// Wraps a value.
    pub fn new(value: T) -> Self {
        State(Arc::new(value))
    }
}

impl<T: ?Sized> Clone for State<T> {
    fn clone(&self) -> Self {
        State(self.0.clone())
    }
}

impl<T: ?Sized> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A state type a job needs, so a worker can check at start that it has them all.
#[derive(Clone, Copy, Debug)]
pub struct StateKey {
    /// The type's id.
    pub type_id: TypeId,
    /// The type's name, for the error message.
    pub type_name: &'static str,
}

impl StateKey {
    /// The key of `T`.
    pub fn of<T: Send + Sync + 'static>() -> Self {
        StateKey {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
        }
    }
}

/// The worker's state values, one per type. Cheap to clone.
#[derive(Clone, Default)]
pub struct StateMap {
    values: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl StateMap {
    /// Adds a value, replacing one of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.values).insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// Adds a value that the caller keeps a handle to, replacing one of the same type.
    pub fn insert_arc<T: Send + Sync + 'static>(&mut self, value: Arc<T>) {
        Arc::make_mut(&mut self.values).insert(TypeId::of::<T>(), value);
    }

    /// The value of type `T`.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<State<T>> {
        let value = self.values.get(&TypeId::of::<T>())?.clone();
        value.downcast::<T>().ok().map(State)
    }

    /// The value of type `T`, or the error a handler reports when it is missing.
    pub fn require<T: Send + Sync + 'static>(&self) -> Result<State<T>, JobError> {
        self.get::<T>().ok_or_else(|| {
            JobError::fatal(format!(
                "the worker has no state of type `{}`: add it with `.state(..)`",
                std::any::type_name::<T>()
            ))
        })
    }

    /// Whether a value of the key's type is present.
    pub fn contains(&self, key: &StateKey) -> bool {
        self.values.contains_key(&key.type_id)
    }
}

impl fmt::Debug for StateMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateMap")
            .field("len", &self.values.len())
            .finish()
    }
}
