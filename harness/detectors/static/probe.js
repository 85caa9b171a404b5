// fetched by the headers page: only its request headers matter
