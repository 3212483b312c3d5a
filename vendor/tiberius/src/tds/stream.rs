mod command;
mod query;
mod token;

pub use command::*;
pub use query::*;
pub use token::*;
